package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// scrape is what one scrape of the exporter's endpoint held: the samples'
// names (as written, suffixes included) and the label names of each.
type scrape map[string]map[string]bool

// workedQueue runs a queue on a real Redis server through every path the
// dashboard and the alerts look at, with its metrics on the OpenTelemetry
// Prometheus exporter served over HTTP, and returns one scrape of that
// endpoint (taken while the queue is open and paused, so that its gauges
// report) and the queue's name.
func workedQueue(t *testing.T) (scrape, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)

	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	// Two attempts: the first nack of an item retries it, the second
	// dead-letters it.
	q := blocking.New[string](rdb, name, blocking.WithMeterProvider(mp), blocking.WithMaxAttempts(2))
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close() })

	// receive takes the next delivery, which must hold want.
	receive := func(want string) *blocking.Delivery[string] {
		t.Helper()
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %q: %v", want, err)
		}
		if d.Value != want {
			t.Fatalf("received %q (attempt %d), want %q", d.Value, d.Attempt, want)
		}
		return d
	}

	// Acked: counted as processed; its lateness is recorded.
	if _, err := q.Offer(ctx, "acked"); err != nil {
		t.Fatal(err)
	}
	if err := receive("acked").Ack(ctx); err != nil {
		t.Fatal(err)
	}
	// Nacked once (a retry), then dead-lettered on its last attempt.
	if _, err := q.Offer(ctx, "failing"); err != nil {
		t.Fatal(err)
	}
	if err := receive("failing").Nack(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := receive("failing").Nack(ctx, 0, blocking.WithReason(errors.New("still failing"))); err != nil {
		t.Fatal(err)
	}
	// Delayed: moved by the transfer when due (a transfer batch), and
	// received late by some amount.
	if _, err := dq.Offer(ctx, "delayed", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := receive("delayed").Ack(ctx); err != nil {
		t.Fatal(err)
	}
	// Ready and waiting while paused: depth by state, latency above 0,
	// paused 1.
	if _, err := q.Offer(ctx, "waiting"); err != nil {
		t.Fatal(err)
	}
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}

	s, err := get(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s, name
}

// get scrapes url once and parses the text exposition.
func get(ctx context.Context, url string) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	s := scrape{}
	add := func(name string, labels []*dto.LabelPair, extra ...string) {
		if s[name] == nil {
			s[name] = map[string]bool{}
		}
		for _, l := range labels {
			s[name][l.GetName()] = true
		}
		for _, l := range extra {
			s[name][l] = true
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				add(name+"_bucket", m.GetLabel(), "le")
				add(name+"_sum", m.GetLabel())
				add(name+"_count", m.GetLabel())
			case dto.MetricType_SUMMARY:
				add(name, m.GetLabel(), "quantile")
				add(name+"_sum", m.GetLabel())
				add(name+"_count", m.GetLabel())
			default:
				add(name, m.GetLabel())
			}
		}
	}
	return s, nil
}
