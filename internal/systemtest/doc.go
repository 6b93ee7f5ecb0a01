// Package systemtest holds redelay's whole-system suites, which drive the
// public packages against real Redis servers the way a fleet would: a model
// of the queue checked against random operations (model_test.go), resends
// after cut connections (resend_test.go), failover and replica ack
// (failover_test.go, replica_test.go, replica_failover_test.go), many
// clients at once (clients_test.go), killed consumer processes
// (chaos_test.go) and partitions spread over a cluster
// (partition_cluster_test.go). It has no code of its own: only tests,
// which use nothing but the public API and the test harness.
package systemtest
