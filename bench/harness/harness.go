// Package harness runs the side-by-side workloads: each contestant against
// its own fresh redis-server per workload, every wait bounded in time.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redelay/redelay/bench/contestants"
)

// Config sizes a run.
type Config struct {
	Mode           string        `json:"mode"` // "smoke", "quick" or "full"
	OfferN         int           `json:"offer_n"`
	BurstN         int           `json:"burst_n"`
	TrickleN       int           `json:"trickle_n"`
	TrickleSpan    time.Duration `json:"trickle_span_ns"`
	Backlogs       []int         `json:"backlogs"`
	LatencyM       int           `json:"latency_samples"`
	TransferK      int           `json:"transfer_batch"`
	CancelM        int           `json:"cancel_samples"`
	CeilingN       int           `json:"ceiling_requests"`
	Producers      int           `json:"producers"`
	MemoryN        int           `json:"memory_n"`            // padded memory measurement: items
	ValueBytes     int           `json:"value_padding_bytes"` // … and padding per item
	RedisServer    string        `json:"-"`
	RedisBenchmark string        `json:"-"`
	Only           []string      `json:"only,omitempty"`
	Workloads      []string      `json:"workloads,omitempty"` // of Workloads(); empty: all
	Log            io.Writer     `json:"-"`
}

// Workloads names the workloads in the order Run runs them; Config.Workloads
// picks some of them (the ceiling runs with every selection).
func Workloads() []string { return []string{"offer", "memory", "burst", "trickle", "backlog"} }

// Smoke, Quick and Full are the predefined sizes. Smoke runs every workload
// of every contestant at sizes too small to rank anyone: it checks that each
// runs cleanly (nothing lost or duplicated) in about a minute, for the test
// suite; its figures mean nothing.
func Smoke() Config {
	return Config{Mode: "smoke", OfferN: 2000, BurstN: 2000, TrickleN: 50, TrickleSpan: time.Second,
		Backlogs: []int{2000}, LatencyM: 20, TransferK: 200, CancelM: 20, CeilingN: 20000, Producers: 8,
		MemoryN: 2000, ValueBytes: 256}
}

// Quick is the size of the committed quick results: under 3 minutes on 2
// cores, large enough to rank the contestants.
func Quick() Config {
	return Config{Mode: "quick", OfferN: 20000, BurstN: 20000, TrickleN: 500, TrickleSpan: 5 * time.Second,
		Backlogs: []int{10000}, LatencyM: 200, TransferK: 1000, CancelM: 100, CeilingN: 200000, Producers: 8,
		MemoryN: 20000, ValueBytes: 256}
}

// Full is the size of the committed full results: backlogs up to 1M, under
// 30 minutes.
func Full() Config {
	return Config{Mode: "full", OfferN: 200000, BurstN: 100000, TrickleN: 2000, TrickleSpan: 10 * time.Second,
		Backlogs: []int{10000, 100000, 1000000}, LatencyM: 500, TransferK: 5000, CancelM: 200, CeilingN: 2000000, Producers: 8,
		MemoryN: 100000, ValueBytes: 256}
}

// Latency summarises arrival − due, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	Min float64 `json:"min_ms"`
	// Samples holds every lateness (ms) for the trickle workload (charts).
	Samples []float64 `json:"samples_ms,omitempty"`
}

type ContestantInfo struct {
	Name     string `json:"name"`
	Settings string `json:"settings"`
	Batch    bool   `json:"batch_offer"`
	Cancel   bool   `json:"cancel_by_id"`
}

type OfferResult struct {
	Contestant string  `json:"contestant"`
	Producers  int     `json:"producers"`
	Batch      bool    `json:"batch"`
	N          int     `json:"n"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"items_per_sec"`
	BytesPer   float64 `json:"redis_bytes_per_pending_item,omitempty"`
	// CPUPer is the Redis server's CPU time (user + system, INFO cpu)
	// during the offers, µs per item: what one offer costs the server,
	// whatever the clients' share of the machine.
	CPUPer float64 `json:"redis_cpu_us_per_item,omitempty"`
	// ClientCPUPer is the client side's CPU time during the offers
	// (clientCPU: this process, plus the contestant's own client process),
	// µs per item. With CPUPer it says where an offer's time goes; the
	// rest of the wall time is waiting (round trips, wake-ups).
	ClientCPUPer float64 `json:"client_cpu_us_per_item,omitempty"`
	Errors       int     `json:"errors"`
	Note         string  `json:"note,omitempty"`
}

// MemoryResult is Redis memory per pending item, for one value size: the
// 1-producer offer run (ValueBytes 0: the id alone) and the padded run.
type MemoryResult struct {
	Contestant string  `json:"contestant"`
	ValueBytes int     `json:"value_padding_bytes"` // padding beside the id; 0: the id alone
	N          int     `json:"n"`
	Producers  int     `json:"producers"`
	BytesPer   float64 `json:"redis_bytes_per_pending_item"`
	Errors     int     `json:"errors"`
	Note       string  `json:"note,omitempty"`
}

type DeliveryResult struct {
	Contestant   string  `json:"contestant"`
	N            int     `json:"n"`
	OfferSeconds float64 `json:"offer_seconds"`
	DrainSeconds float64 `json:"drain_seconds,omitempty"` // due → last arrival
	DrainRate    float64 `json:"drain_items_per_sec,omitempty"`
	Lateness     Latency `json:"lateness"`
	Lost         int     `json:"lost"`
	Dup          int     `json:"duplicated"`
	Errors       int     `json:"offer_errors"`
	Note         string  `json:"note,omitempty"`
}

type BacklogResult struct {
	Contestant    string  `json:"contestant"`
	Backlog       int     `json:"backlog"`
	FillSeconds   float64 `json:"fill_seconds"`
	OfferMeanUs   float64 `json:"offer_mean_us"`
	TransferK     int     `json:"transfer_k"`
	TransferMs    float64 `json:"transfer_due_to_last_ms"`
	TransferRate  float64 `json:"transfer_items_per_sec"`
	TransferLost  int     `json:"transfer_lost"`
	CancelMeanUs  float64 `json:"cancel_mean_us"` // -1: no Canceler
	CancelSamples int     `json:"cancel_samples"`
	Note          string  `json:"note,omitempty"`
}

type CeilingResult struct {
	Test   string  `json:"test"`
	PerSec float64 `json:"requests_per_sec"`
}

// Results is everything one run measured.
type Results struct {
	Date         string           `json:"date"`
	GoVersion    string           `json:"go_version"`
	RedisVersion string           `json:"redis_version"`
	CPUs         int              `json:"cpus"`
	Config       Config           `json:"config"`
	WallSeconds  float64          `json:"wall_seconds"`
	Contestants  []ContestantInfo `json:"contestants"`
	Offer        []OfferResult    `json:"offer"`
	Memory       []MemoryResult   `json:"memory"`
	Burst        []DeliveryResult `json:"burst"`
	Trickle      []DeliveryResult `json:"trickle"`
	Backlog      []BacklogResult  `json:"backlog"`
	Ceiling      []CeilingResult  `json:"ceiling"`
	// Problems lists every failure: a setup or workload error, a failed
	// offer or cancel, a lost or duplicated item, a bound hit. Empty on a
	// clean run; cmd bench exits non-zero otherwise.
	Problems []string `json:"problems,omitempty"`
}

type runner struct {
	cfg Config
	res *Results
	mu  sync.Mutex
}

func (r *runner) logf(format string, a ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
}

func (r *runner) problem(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	r.logf("PROBLEM: %s", s)
	r.mu.Lock()
	r.res.Problems = append(r.res.Problems, s)
	r.mu.Unlock()
}

// checkDelivery records a problem for offer errors, lost or duplicated
// items.
func (r *runner) checkDelivery(workload string, d DeliveryResult) {
	if d.Errors > 0 {
		r.problem("%s %s: %d offers failed", workload, d.Contestant, d.Errors)
	}
	if d.Lost > 0 || d.Dup > 0 {
		r.problem("%s %s: %d of %d items not delivered within the bound, %d duplicated", workload, d.Contestant, d.Lost, d.N, d.Dup)
	}
}

// Run runs every workload for every selected contestant.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	start := time.Now()
	if cfg.RedisServer == "" {
		cfg.RedisServer = "redis-server"
	}
	if cfg.RedisBenchmark == "" {
		cfg.RedisBenchmark = "redis-benchmark"
	}
	names := contestants.All()
	if len(cfg.Only) > 0 {
		var sel []string
		for _, n := range cfg.Only {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("unknown contestant %q (have %s)", n, strings.Join(names, ", "))
			}
			sel = append(sel, n)
		}
		names = sel
	}
	res := &Results{Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(),
		CPUs: runtime.NumCPU(), Config: cfg}
	r := &runner{cfg: cfg, res: res}
	srv, err := StartServer(ctx, cfg.RedisServer)
	if err != nil {
		return nil, err
	}
	res.RedisVersion = srv.Version(ctx)
	srv.Stop()
	for _, n := range names {
		c := contestants.New(n)
		_, b := c.(contestants.BatchOfferer)
		_, k := c.(contestants.Canceler)
		res.Contestants = append(res.Contestants, ContestantInfo{Name: n, Settings: c.Settings(), Batch: b, Cancel: k})
	}
	for _, w := range cfg.Workloads {
		if !slices.Contains(Workloads(), w) {
			return nil, fmt.Errorf("unknown workload %q (have %s)", w, strings.Join(Workloads(), ", "))
		}
	}
	want := func(w string) bool { return len(cfg.Workloads) == 0 || slices.Contains(cfg.Workloads, w) }
	for _, n := range names {
		if want("offer") {
			r.offerWorkload(ctx, n)
		}
		if want("memory") {
			r.memoryWorkload(ctx, n)
		}
	}
	for _, n := range names {
		if want("burst") {
			r.burstWorkload(ctx, n)
		}
	}
	for _, n := range names {
		if want("trickle") {
			r.trickleWorkload(ctx, n)
		}
	}
	for _, b := range cfg.Backlogs {
		for _, n := range names {
			if want("backlog") {
				r.backlogWorkload(ctx, n, b)
			}
		}
	}
	r.ceiling(ctx)
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}

// session runs fn with a fresh server and a fresh, set-up contestant, all
// bounded by limit; Close is bounded too.
func (r *runner) session(ctx context.Context, name string, limit time.Duration,
	fn func(ctx context.Context, c contestants.Contestant, srv *Server) error) error {
	return r.paddedSession(ctx, name, 0, limit, fn)
}

// paddedSession is session with the contestant's values padded with pad
// bytes.
func (r *runner) paddedSession(ctx context.Context, name string, pad int, limit time.Duration,
	fn func(ctx context.Context, c contestants.Contestant, srv *Server) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	srv, err := StartServer(ctx, r.cfg.RedisServer)
	if err != nil {
		return err
	}
	defer srv.Stop()
	c := contestants.New(name)
	c.SetPadding(pad)
	if err := c.Setup(ctx, srv.Addr); err != nil {
		closeBounded(c)
		return fmt.Errorf("setup: %w", err)
	}
	err = fn(ctx, c, srv)
	if !closeBounded(c) {
		r.problem("%s: Close did not return within 15 s", name)
	}
	return err
}

func closeBounded(c contestants.Contestant) bool {
	done := make(chan struct{})
	go func() { _ = c.Close(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(15 * time.Second):
		return false
	}
}

// offerTimeout bounds each offer, as a service bounds the offers of its
// requests: every offer carries a context that can end.
const offerTimeout = 10 * time.Second

// offerAll offers ids from p goroutines, each offer under a context with a
// deadline (offerTimeout); it returns the elapsed time and the number of
// failed offers.
func offerAll(ctx context.Context, c contestants.Contestant, ids []int, due func(i int) time.Time, p int) (time.Duration, int) {
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range p {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) || ctx.Err() != nil {
					return
				}
				octx, cancel := context.WithTimeout(ctx, offerTimeout)
				if err := c.Offer(octx, ids[i], due(i)); err != nil {
					errs.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	return time.Since(start), int(errs.Load())
}

func seq(from, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = from + i
	}
	return s
}

// tracker records the first arrival of each id in [base, base+n) and counts
// duplicates.
type tracker struct {
	base  int
	first []atomic.Int64
	count []atomic.Int32
	got   atomic.Int64
	done  chan struct{}
}

func newTracker(base, n int) *tracker {
	return &tracker{base: base, first: make([]atomic.Int64, n), count: make([]atomic.Int32, n), done: make(chan struct{})}
}

func (t *tracker) arrived(id int) {
	now := time.Now().UnixNano()
	i := id - t.base
	if i < 0 || i >= len(t.count) {
		return
	}
	if t.count[i].Add(1) == 1 {
		t.first[i].Store(now)
		if t.got.Add(1) == int64(len(t.count)) {
			close(t.done)
		}
	}
}

// wait waits for all arrivals or the bound; then a short grace to catch
// duplicates.
func (t *tracker) wait(ctx context.Context, bound time.Duration) {
	select {
	case <-t.done:
		time.Sleep(200 * time.Millisecond)
	case <-time.After(bound):
	case <-ctx.Done():
	}
}

// summarise computes lateness against due (per index), lost, dup and the
// last arrival.
func (t *tracker) summarise(due func(i int) time.Time, keep bool) (lat Latency, lost, dup int, last time.Time) {
	var ls []float64
	for i := range t.count {
		c := int(t.count[i].Load())
		if c == 0 {
			lost++
			continue
		}
		dup += c - 1
		at := time.Unix(0, t.first[i].Load())
		if at.After(last) {
			last = at
		}
		ls = append(ls, float64(at.Sub(due(i)).Microseconds())/1000)
	}
	sort.Float64s(ls)
	if len(ls) > 0 {
		lat = Latency{P50: pct(ls, 0.50), P99: pct(ls, 0.99), Max: ls[len(ls)-1], Min: ls[0]}
		if keep {
			lat.Samples = ls
		}
	}
	return
}

func pct(s []float64, p float64) float64 {
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func (r *runner) offerWorkload(ctx context.Context, name string) {
	n := r.cfg.OfferN
	far := time.Now().Add(24 * time.Hour)
	for _, p := range []int{1, r.cfg.Producers} {
		r.logf("offer: %s, %d producer(s), %d items", name, p, n)
		res := OfferResult{Contestant: name, Producers: p, N: n}
		err := r.session(ctx, name, 120*time.Second, func(ctx context.Context, c contestants.Contestant, srv *Server) error {
			el, err := offerMeasured(ctx, c, srv, n, far, p, &res)
			res.Seconds = el.Seconds()
			res.PerSec = float64(n-res.Errors) / el.Seconds()
			return err
		})
		if err != nil {
			res.Note = err.Error()
			r.problem("offer %s p=%d: %v", name, p, err)
		}
		if res.Errors > 0 {
			r.problem("offer %s p=%d: %d of %d offers failed", name, p, res.Errors, n)
		}
		r.res.Offer = append(r.res.Offer, res)
		if p == 1 {
			r.res.Memory = append(r.res.Memory, MemoryResult{Contestant: name, N: n, Producers: p,
				BytesPer: res.BytesPer, Errors: res.Errors, Note: res.Note})
		}
	}
	if _, ok := contestants.New(name).(contestants.BatchOfferer); !ok {
		return
	}
	r.logf("offer: %s, batch path, %d items", name, n)
	res := OfferResult{Contestant: name, Producers: 1, Batch: true, N: n}
	err := r.session(ctx, name, 120*time.Second, func(ctx context.Context, c contestants.Contestant, srv *Server) error {
		b := c.(contestants.BatchOfferer)
		before, err := srv.DataMemory(ctx)
		if err != nil {
			return err
		}
		start := time.Now()
		const chunk = 1000
		for i := 0; i < n && ctx.Err() == nil; i += chunk {
			if err := b.OfferBatch(ctx, seq(i, min(chunk, n-i)), far); err != nil {
				res.Errors += min(chunk, n-i)
			}
		}
		el := time.Since(start)
		res.Seconds = el.Seconds()
		res.PerSec = float64(n-res.Errors) / el.Seconds()
		if ctx.Err() != nil {
			return errors.New("cut at the time bound")
		}
		after, err := srv.DataMemory(ctx)
		if err != nil {
			return err
		}
		if n > res.Errors {
			res.BytesPer = float64(after-before) / float64(n-res.Errors)
		}
		res.Note = "OfferBatch, 1000 ids per call"
		return nil
	})
	if err != nil {
		res.Note = err.Error()
		r.problem("offer batch %s: %v", name, err)
	}
	if res.Errors > 0 {
		r.problem("offer batch %s: %d of %d offers failed", name, res.Errors, n)
	}
	r.res.Offer = append(r.res.Offer, res)
}

// memoryWorkload measures Redis memory per pending item with values padded
// to a realistic size: MemoryN items, ValueBytes of padding each, due in
// 24 h, offered by the usual producers.
func (r *runner) memoryWorkload(ctx context.Context, name string) {
	n, pad, p := r.cfg.MemoryN, r.cfg.ValueBytes, r.cfg.Producers
	if n <= 0 || pad <= 0 {
		return
	}
	r.logf("memory: %s, %d items with %d bytes of padding, %d producers", name, n, pad, p)
	res := MemoryResult{Contestant: name, ValueBytes: pad, N: n, Producers: p}
	far := time.Now().Add(24 * time.Hour)
	err := r.paddedSession(ctx, name, pad, 120*time.Second, func(ctx context.Context, c contestants.Contestant, srv *Server) error {
		var o OfferResult
		_, err := offerMeasured(ctx, c, srv, n, far, p, &o)
		res.Errors, res.BytesPer = o.Errors, o.BytesPer
		return err
	})
	if err != nil {
		res.Note = err.Error()
		r.problem("memory %s (%d-byte padding): %v", name, pad, err)
	}
	if res.Errors > 0 {
		r.problem("memory %s (%d-byte padding): %d of %d offers failed", name, pad, res.Errors, n)
	}
	r.res.Memory = append(r.res.Memory, res)
}

// offerMeasured offers n items due at far from p producers and returns the
// time it took; it sets *errs to the failed offers and *bytesPer to the
// growth of the server's data memory per offered item.
func offerMeasured(ctx context.Context, c contestants.Contestant, srv *Server, n int, far time.Time, p int, res *OfferResult) (time.Duration, error) {
	before, err := srv.DataMemory(ctx)
	if err != nil {
		return 0, err
	}
	cpu, err := srv.CPU(ctx)
	if err != nil {
		return 0, err
	}
	client, clientErr := clientCPU(c)
	el, failed := offerAll(ctx, c, seq(0, n), func(int) time.Time { return far }, p)
	clientAfter, clientAfterErr := clientCPU(c)
	res.Errors = failed
	if ctx.Err() != nil {
		return el, errors.New("cut at the time bound")
	}
	cpuAfter, err := srv.CPU(ctx)
	if err != nil {
		return el, err
	}
	after, err := srv.DataMemory(ctx)
	if err != nil {
		return el, err
	}
	if n > failed {
		res.BytesPer = float64(after-before) / float64(n-failed)
		res.CPUPer = (cpuAfter - cpu).Seconds() * 1e6 / float64(n-failed)
		if err := errors.Join(clientErr, clientAfterErr); err != nil {
			return el, err
		}
		res.ClientCPUPer = (clientAfter - client).Seconds() * 1e6 / float64(n-failed)
	}
	return el, nil
}

// offerRate is the contestant's measured multi-producer offer rate, or 0.
func (r *runner) offerRate(name string) float64 {
	for _, o := range r.res.Offer {
		if o.Contestant == name && o.Producers == r.cfg.Producers && !o.Batch {
			return o.PerSec
		}
	}
	return 0
}

func (r *runner) burstWorkload(ctx context.Context, name string) {
	n := r.cfg.BurstN
	margin := 10 * time.Second
	if rate := r.offerRate(name); rate > 0 {
		margin = time.Duration(float64(n)/rate*1.5*float64(time.Second)) + time.Second
	}
	bound := 30*time.Second + time.Duration(n/1000)*time.Second
	r.logf("burst: %s, %d items due in %v, drain bound %v", name, n, margin.Round(time.Millisecond), bound)
	res := DeliveryResult{Contestant: name, N: n}
	err := r.session(ctx, name, margin+bound+60*time.Second, func(ctx context.Context, c contestants.Contestant, srv *Server) error {
		due := time.Now().Add(margin).Round(0).Truncate(time.Millisecond)
		dueF := func(int) time.Time { return due }
		el, errs := offerAll(ctx, c, seq(0, n), dueF, r.cfg.Producers)
		res.OfferSeconds, res.Errors = el.Seconds(), errs
		if time.Now().After(due) {
			res.Note = fmt.Sprintf("offering overran the due time by %v", time.Since(due).Round(time.Millisecond))
		}
		t := newTracker(0, n)
		if err := c.Consume(ctx, t.arrived); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		t.wait(ctx, time.Until(due)+bound)
		lat, lost, dup, last := t.summarise(dueF, false)
		res.Lateness, res.Lost, res.Dup = lat, lost, dup
		if !last.IsZero() {
			res.DrainSeconds = last.Sub(due).Seconds()
			if res.DrainSeconds > 0 {
				res.DrainRate = float64(n-lost) / res.DrainSeconds
			}
		}
		return nil
	})
	if err != nil {
		res.Note = err.Error()
		r.problem("burst %s: %v", name, err)
	} else {
		r.checkDelivery("burst", res)
	}
	r.res.Burst = append(r.res.Burst, res)
}

func (r *runner) trickleWorkload(ctx context.Context, name string) {
	n, span := r.cfg.TrickleN, r.cfg.TrickleSpan
	lead := time.Second
	// Grace after the last due time: asynq alone may take 5 s (its
	// forwarder's poll) plus 1 s (its processors' poll) to deliver.
	const grace = 10 * time.Second
	bound := lead + span + grace
	r.logf("trickle: %s, %d items over %v", name, n, span)
	res := DeliveryResult{Contestant: name, N: n}
	err := r.session(ctx, name, bound+60*time.Second, func(ctx context.Context, c contestants.Contestant, srv *Server) error {
		t := newTracker(0, n)
		if err := c.Consume(ctx, t.arrived); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		t0 := time.Now().Add(lead)
		// Due times in whole milliseconds: every contestant stores ms.
		dueF := func(i int) time.Time {
			return t0.Add(time.Duration(i) * span / time.Duration(n)).Round(0).Truncate(time.Millisecond)
		}
		el, errs := offerAll(ctx, c, seq(0, n), dueF, r.cfg.Producers)
		res.OfferSeconds, res.Errors = el.Seconds(), errs
		if el > lead {
			res.Note = fmt.Sprintf("offering took %v, longer than the %v lead", el.Round(time.Millisecond), lead)
		}
		t.wait(ctx, time.Until(t0)+span+grace)
		res.Lateness, res.Lost, res.Dup, _ = t.summarise(dueF, true)
		return nil
	})
	if err != nil {
		res.Note = err.Error()
		r.problem("trickle %s: %v", name, err)
	} else {
		r.checkDelivery("trickle", res)
	}
	r.res.Trickle = append(r.res.Trickle, res)
}

func (r *runner) backlogWorkload(ctx context.Context, name string, b int) {
	r.logf("backlog: %s, %d pending", name, b)
	res := BacklogResult{Contestant: name, Backlog: b, CancelMeanUs: -1}
	limit := 5*time.Minute + time.Duration(b/1000)*time.Second
	err := r.session(ctx, name, limit, func(ctx context.Context, c contestants.Contestant, srv *Server) error {
		far := time.Now().Add(24 * time.Hour)
		farF := func(int) time.Time { return far }
		el, errs := offerAll(ctx, c, seq(0, b), farF, r.cfg.Producers)
		res.FillSeconds = el.Seconds()
		if errs > 0 {
			res.Note = fmt.Sprintf("%d fill offers failed; ", errs)
			r.problem("backlog %s %d: %d of %d fill offers failed", name, b, errs, b)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("fill cut at the time bound")
		}
		// Offer latency: M sequential single offers, far in the future.
		m := r.cfg.LatencyM
		start, failed := time.Now(), 0
		for i := range m {
			if err := c.Offer(ctx, b+i, far); err != nil {
				failed++
			}
		}
		res.OfferMeanUs = float64(time.Since(start).Microseconds()) / float64(m)
		if failed > 0 {
			r.problem("backlog %s %d: %d of %d single offers failed", name, b, failed, m)
		}
		// Transfer: K items due shortly, drained from among the backlog.
		k := r.cfg.TransferK
		base := b + m
		t := newTracker(base, k)
		if err := c.Consume(ctx, t.arrived); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		due := time.Now().Add(2 * time.Second).Round(0).Truncate(time.Millisecond)
		dueF := func(int) time.Time { return due }
		if _, errs := offerAll(ctx, c, seq(base, k), dueF, r.cfg.Producers); errs > 0 {
			r.problem("backlog %s %d: %d of %d transfer offers failed", name, b, errs, k)
		}
		t.wait(ctx, time.Until(due)+30*time.Second)
		_, lost, dup, last := t.summarise(dueF, false)
		res.TransferK, res.TransferLost = k, lost
		if lost > 0 || dup > 0 {
			r.problem("backlog %s %d: transfer: %d of %d items not delivered within the bound, %d duplicated", name, b, lost, k, dup)
		}
		if d := last.Sub(due).Seconds(); !last.IsZero() && d > 0 {
			res.TransferMs = d * 1000
			res.TransferRate = float64(k-lost) / d
		}
		// Cancel by id: random backlog ids, sequential, 15 s at most.
		if cc, ok := c.(contestants.Canceler); ok {
			rng := rand.New(rand.NewPCG(uint64(b), 7))
			var total time.Duration
			stop := time.Now().Add(15 * time.Second)
			// Distinct ids: each cancel finds its item pending.
			ids := rng.Perm(b)
			for i := 0; i < min(r.cfg.CancelM, b) && time.Now().Before(stop) && ctx.Err() == nil; i++ {
				id := ids[i]
				s := time.Now()
				if err := cc.Cancel(ctx, id); err != nil {
					res.Note += "cancel error: " + err.Error() + "; "
					r.problem("backlog %s %d: cancel %d: %v", name, b, id, err)
					break
				}
				total += time.Since(s)
				res.CancelSamples++
			}
			if res.CancelSamples > 0 {
				res.CancelMeanUs = float64(total.Microseconds()) / float64(res.CancelSamples)
			}
		}
		return nil
	})
	if err != nil {
		res.Note += err.Error()
		r.problem("backlog %s %d: %v", name, b, err)
	}
	r.res.Backlog = append(r.res.Backlog, res)
}

func (r *runner) ceiling(ctx context.Context) {
	r.logf("ceiling: redis-benchmark -P 64 -n %d", r.cfg.CeilingN)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	srv, err := StartServer(ctx, r.cfg.RedisServer)
	if err != nil {
		r.problem("ceiling: %v", err)
		return
	}
	defer srv.Stop()
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(srv.Port), "-P", "64", "-n", strconv.Itoa(r.cfg.CeilingN), "-q"}
	out, err := exec.CommandContext(ctx, r.cfg.RedisBenchmark, append(args, "-t", "zadd,lpush,rpop")...).CombinedOutput()
	if err != nil {
		r.problem("ceiling: %v: %s", err, out)
		return
	}
	r.res.Ceiling = parseBenchmark(string(out))
}

// parseBenchmark reads redis-benchmark -q lines such as
// "ZADD: 1234567.00 requests per second, p50=0.5 msec".
func parseBenchmark(out string) []CeilingResult {
	var res []CeilingResult
	for _, line := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || !strings.Contains(rest, "requests per second") {
			continue
		}
		f := strings.Fields(rest)
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			res = append(res, CeilingResult{Test: name, PerSec: v})
		}
	}
	return res
}
