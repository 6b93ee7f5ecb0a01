// Package deploy holds what an operator deploys next to redelay, and the
// test that keeps it true to the library: grafana/redelay.json, a Grafana
// dashboard, and prometheus/alerts.yml, Prometheus alerting rules, both
// built on the metrics a queue exports through the OpenTelemetry
// Prometheus exporter. The package has no code; its test runs a queue on a
// real Redis server, scrapes its metrics, and fails when a query in either
// file names a metric or a label the scrape does not have.
//
// It is a module of its own, so that the exporter and the PromQL parser
// its test uses stay out of redelay's go.mod.
package deploy
