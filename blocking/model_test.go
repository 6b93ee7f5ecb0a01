package blocking_test

// TestModel is a model-based property test of at-least-once delivery: rapid
// draws sequences of offers (blocking and delayed, with and without WithID),
// removals, receives, acks, nacks, extensions, redrives and clock moves,
// runs each against a queue on miniredis and against an in-memory model of
// the Lua scripts, and after every step compares the whole stored state
// (ready list order, pending items with their sequence numbers and fields,
// leases with their tokens and deadlines, dead letters) with the model.
//
// Time is deterministic: miniredis's clock is frozen with SetTime, and the
// scripts read it with TIME. The "advance" step moves it and runs
// transfer.RunOnce in one step, so due items move and expired leases are
// reclaimed at a point the model knows. Each check draws one of two ways to
// live with the transfer worker that Receive starts:
//
//   - q's own worker runs from the first Receive on, as in production. It
//     sees the same frozen clock: between two advances it finds nothing due
//     and nothing expired, and during an advance it can only do what RunOnce
//     does. The one thing it can leave unfinished when RunOnce returns is
//     the dead-lettering of exhausted leases it reclaimed itself (the
//     reclaim script holds them, the worker then buries them one by one),
//     so the advance step waits for the inflight hash to shrink to the
//     model's lease count before anything is compared.
//   - "transient receivers": each Receive goes through a queue of its own,
//     closed at once (its deliveries can still be settled), so no worker
//     runs between steps. Then the "lag" step may move the clock without a
//     transfer, which reaches the states a late transfer leaves: items due
//     but still pending (a zero-delay offer or nack then queues behind
//     them), leases expired but not yet reclaimed (still settleable).
//     Receive is not drawn in those states: the transfer it starts would
//     race with it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/transfer"
)

const (
	modelName       = "model"
	modelVisibility = 10 * time.Second
	// modelProbeWait bounds a Receive the model expects to find nothing.
	// The probe client's read timeout (three times this) makes Receive's
	// server-side block this short, instead of the default 500 ms.
	modelProbeWait = 20 * time.Millisecond
	// modelQuiesce bounds the wait for the transfer worker to finish
	// dead-lettering after an advance.
	modelQuiesce = 2 * time.Second
)

// modelDelays are the delays drawn for offers and nacks; zero, listed
// twice, is drawn more often: it is the one with special cases (straight to
// the ready list, or behind pending items already due).
var modelDelays = []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 5 * time.Second}

// modelT0 is the frozen server clock at the start of every check.
var modelT0 = time.UnixMilli(1_767_225_600_000) // 2026-01-01T00:00:00Z

// modelItem is one item as stored in an envelope.
type modelItem struct {
	val     int
	attempt int    // deliveries so far
	errText string // Headers[HeaderError]
	enq     int64  // EnqueuedAt, Unix ms
	due     int64  // DueAt, Unix ms
}

// modelPending is an item in the delayed set.
type modelPending struct {
	modelItem
	seq   int64  // the member's seq prefix (lua.SeqLen big-endian bytes)
	field string // the items-hash field (the ID, or ID#token after a clash)
}

// modelLease is a received item that is neither settled nor reclaimed.
type modelLease struct {
	modelItem
	deadline int64
}

// modelCoverage counts the transitions the checks went through, so that a
// reader of -v output can see the model is exercised, not just satisfied.
type modelCoverage struct {
	offers, delayedOffers, duplicates, removes   int
	batches                                      int
	receives, probes, acks, extends, lostSettles int
	nackPending, nackReady, nackDead, clashes    int
	transferred, reclaimed, expiredDead, redrive int
	tiedReclaims, lags, offerBehindDue           int
	nackBehindDue, settleExpired                 int
}

// queueModel mirrors the scripts in internal/lua.
type queueModel struct {
	cov     *modelCoverage
	max     int                   // WithMaxAttempts
	now     int64                 // server clock, Unix ms
	seq     int64                 // redelay:{q}:seq (pending items and lease tokens)
	ready   []modelItem           // in receive order: ready[0] comes next
	pending []modelPending        // in (due, seq) order
	leases  map[string]modelLease // by token
	dead    []modelItem           // oldest first
	ids     map[int]string        // item ID by value, once seen
	alive   map[int]bool          // offered, neither acked nor removed
	nextVal int
}

func newQueueModel(cov *modelCoverage, maxAttempts int) *queueModel {
	return &queueModel{
		cov:    cov,
		max:    maxAttempts,
		now:    modelT0.UnixMilli(),
		leases: map[string]modelLease{},
		ids:    map[int]string{},
		alive:  map[int]bool{},
	}
}

func (m *queueModel) newValue() int {
	m.nextVal++
	return m.nextVal
}

func (m *queueModel) pendingField(field string) int {
	return slices.IndexFunc(m.pending, func(p modelPending) bool { return p.field == field })
}

// schedule is the rule offer.lua applies to each item and nack.lua's
// schedule to a retry: straight to the ready tail when due and nothing
// pending is due at or before it, else into the delayed set.
// It reports whether the item went to the ready list.
func (m *queueModel) schedule(it modelItem, field string, due int64) bool {
	it.due = due
	if due <= m.now && (len(m.pending) == 0 || m.pending[0].due > due) {
		m.ready = append(m.ready, it)
		return true
	}
	m.seq++
	i := slices.IndexFunc(m.pending, func(p modelPending) bool { return p.due > due })
	if i < 0 {
		i = len(m.pending)
	}
	m.pending = slices.Insert(m.pending, i, modelPending{modelItem: it, seq: m.seq, field: field})
	return false
}

// receive is receive.lua: pop the next ready item, lease it, count the
// delivery. It returns the lease token.
func (m *queueModel) receive() (string, modelLease) {
	it := m.ready[0]
	m.ready = m.ready[1:]
	it.attempt++
	m.seq++
	token := fmt.Sprintf("%012x", m.seq)
	l := modelLease{modelItem: it, deadline: m.now + modelVisibility.Milliseconds()}
	m.leases[token] = l
	m.cov.receives++
	return token, l
}

// nack is blocking.Delivery.Nack followed by nack.lua.
func (m *queueModel) nack(token string, delay time.Duration, reason string) {
	l := m.leases[token]
	delete(m.leases, token)
	it := l.modelItem
	if it.attempt >= m.max {
		it.errText = fmt.Sprintf("%s (attempt %d of %d)", reason, it.attempt, m.max)
		it.attempt = 0
		m.dead = append(m.dead, it)
		m.cov.nackDead++
		return
	}
	it.errText = reason
	field := m.ids[it.val]
	if m.pendingField(field) >= 0 {
		field += "#" + token
		m.cov.clashes++
	}
	due := m.now + delay.Milliseconds()
	switch {
	case m.schedule(it, field, due):
		m.cov.nackReady++
	case due <= m.now:
		m.cov.nackBehindDue++
	default:
		m.cov.nackPending++
	}
}

// lagging reports whether a transfer step is overdue: an item pending
// though due, or a lease expired but not reclaimed.
func (m *queueModel) lagging() bool {
	if len(m.pending) > 0 && m.pending[0].due <= m.now {
		return true
	}
	for _, l := range m.leases {
		if l.deadline <= m.now {
			return true
		}
	}
	return false
}

// advance moves the clock by d and runs a transfer step.
func (m *queueModel) advance(d time.Duration) {
	m.now += d.Milliseconds()
	m.runOnce()
}

// runOnce is what transfer.RunOnce does: transfer.lua (due items to the
// ready tail, in (due, seq) order), then reclaim.lua (expired leases in the
// sorted set's order: deadline, then token; put at the head of the ready
// list in that order, so the earliest lease is received first, or, when out
// of attempts, dead-lettered by the worker's bury). The transfer only
// appends and the reclaim only prepends, so a worker running the two in
// another interleaving ends in the same state.
func (m *queueModel) runOnce() {
	for len(m.pending) > 0 && m.pending[0].due <= m.now {
		m.ready = append(m.ready, m.pending[0].modelItem)
		m.pending = m.pending[1:]
		m.cov.transferred++
	}
	expired := m.leaseOrder(func(l modelLease) bool { return l.deadline <= m.now })
	for i, token := range expired {
		if i > 0 && m.leases[expired[i-1]].deadline == m.leases[token].deadline {
			m.cov.tiedReclaims++
		}
	}
	var back []modelItem
	for _, token := range expired {
		it := m.leases[token].modelItem
		delete(m.leases, token)
		if it.attempt >= m.max {
			it.errText = fmt.Sprintf("lease expired on attempt %d of %d", it.attempt, m.max)
			it.attempt = 0
			m.dead = append(m.dead, it)
			m.cov.expiredDead++
			continue
		}
		back = append(back, it)
		m.cov.reclaimed++
	}
	m.ready = append(back, m.ready...)
}

// leaseOrder returns the tokens of the leases that pass keep, in the order
// of the leases sorted set.
func (m *queueModel) leaseOrder(keep func(modelLease) bool) []string {
	var tokens []string
	for token, l := range m.leases {
		if keep(l) {
			tokens = append(tokens, token)
		}
	}
	slices.SortFunc(tokens, func(a, b string) int {
		return cmp.Or(cmp.Compare(m.leases[a].deadline, m.leases[b].deadline), strings.Compare(a, b))
	})
	return tokens
}

// redrive is redrive.lua: oldest dead letters to the ready tail, attempts
// reset. It returns how many moved.
func (m *queueModel) redrive(limit int) int {
	n := len(m.dead)
	if limit > 0 {
		n = min(n, limit)
	}
	for _, it := range m.dead[:n] {
		it.attempt = 0
		m.ready = append(m.ready, it)
	}
	m.dead = m.dead[n:]
	m.cov.redrive += n
	return n
}

func (m *queueModel) fmtItem(it modelItem) string {
	return modelFmt(it, m.ids[it.val])
}

func modelFmt(it modelItem, id string) string {
	t0 := modelT0.UnixMilli()
	return fmt.Sprintf("v%d id=%s attempt=%d err=%q enq=%+d due=%+d", it.val, id, it.attempt, it.errText, it.enq-t0, it.due-t0)
}

// modelHandle is a delivery the test received, with the token the model
// gave its lease.
type modelHandle struct {
	d     *blocking.Delivery[int]
	token string
}

// modelMachine runs one check: a fresh miniredis, the queue under test and
// the model.
type modelMachine struct {
	ctx      context.Context
	mr       *miniredis.Miniredis
	rdb      *redis.Client
	probeRDB *redis.Client
	k        keys.Queue
	q        *blocking.Queue[int]
	dq       *delayed.Queue[int]
	m        *queueModel
	handles  []modelHandle
	// transient: every Receive goes through a queue of its own, closed at
	// once, so that no transfer worker runs between steps and the clock
	// may advance without a transfer ("lag"). Otherwise Receive uses q,
	// whose worker runs from the first Receive to the end of the check.
	transient bool
}

func (s *modelMachine) options() []blocking.Option {
	return []blocking.Option{
		blocking.WithVisibilityTimeout(modelVisibility),
		blocking.WithMaxAttempts(s.m.max),
	}
}

func newModelMachine(t *rapid.T, cov *modelCoverage) *modelMachine {
	maxAttempts := rapid.IntRange(1, 3).Draw(t, "maxAttempts")
	transient := rapid.IntRange(0, 2).Draw(t, "transientReceivers") > 0
	mr, err := miniredis.Run()
	if err != nil {
		t.Fatalf("miniredis: %v", err)
	}
	mr.SetTime(modelT0)
	k, err := keys.New(modelName)
	if err != nil {
		mr.Close()
		t.Fatalf("keys: %v", err)
	}
	s := &modelMachine{
		ctx: context.Background(),
		mr:  mr,
		rdb: redis.NewClient(&redis.Options{Addr: mr.Addr()}),
		probeRDB: redis.NewClient(&redis.Options{
			Addr: mr.Addr(), ReadTimeout: 3 * modelProbeWait, MaxRetries: -1,
		}),
		k:         k,
		m:         newQueueModel(cov, maxAttempts),
		transient: transient,
	}
	s.q = blocking.New[int](s.rdb, modelName, s.options()...)
	s.dq = delayed.New(s.q, delayed.WithoutTransfer())
	return s
}

func (s *modelMachine) close() {
	_ = s.dq.Close()
	_ = s.q.Close()
	_ = s.probeRDB.Close()
	_ = s.rdb.Close()
	s.mr.Close()
}

func (s *modelMachine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"offer":        s.offer,
		"offerDelayed": s.offerDelayed,
		"offerBatch":   s.offerBatch,
		"remove":       s.remove,
		"receive":      s.receive,
		"ack":          s.ack,
		"nack":         s.nack,
		"extend":       s.extend,
		"advance":      s.advance,
		"lag":          s.lag,
		"redrive":      s.redrive,
		"":             s.check,
	}
}

func (s *modelMachine) offer(t *rapid.T) {
	v := s.m.newValue()
	if err := s.q.Offer(s.ctx, v); err != nil {
		t.Fatalf("Offer(%d): %v", v, err)
	}
	s.m.ready = append(s.m.ready, modelItem{val: v, enq: s.m.now, due: s.m.now})
	s.m.alive[v] = true
	s.m.cov.offers++
}

func (s *modelMachine) offerDelayed(t *rapid.T) {
	delay := rapid.SampledFrom(modelDelays).Draw(t, "delay")
	withID := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "id")
	var opts []delayed.OfferOption
	if withID != "" {
		opts = append(opts, delayed.WithID(withID))
	}
	v := s.m.newValue()
	id, err := s.dq.Offer(s.ctx, v, delay, opts...)
	if withID != "" && s.m.pendingField(withID) >= 0 {
		if !errors.Is(err, delayed.ErrDuplicate) {
			t.Fatalf("Offer(%d, %v, WithID(%q)) with %q pending = %q, %v; want ErrDuplicate", v, delay, withID, withID, id, err)
		}
		s.m.cov.duplicates++
		return
	}
	if err != nil {
		t.Fatalf("Offer(%d, %v, WithID(%q)): %v", v, delay, withID, err)
	}
	if withID != "" && id != withID {
		t.Fatalf("Offer with WithID(%q) returned ID %q", withID, id)
	}
	s.m.ids[v] = id
	s.m.alive[v] = true
	if !s.m.schedule(modelItem{val: v, enq: s.m.now}, id, s.m.now+delay.Milliseconds()) && delay == 0 {
		s.m.cov.offerBehindDue++
	}
	s.m.cov.delayedOffers++
}

// offerBatch is delayed.Queue.OfferBatch (offer.lua with many items): the
// items are decided in order as single offers would be, which the model
// reaches by scheduling them one by one.
func (s *modelMachine) offerBatch(t *rapid.T) {
	delay := rapid.SampledFrom(modelDelays).Draw(t, "delay")
	n := rapid.IntRange(1, 3).Draw(t, "n")
	values := make([]int, n)
	for i := range values {
		values[i] = s.m.newValue()
	}
	ids, err := s.dq.OfferBatch(s.ctx, values, delay)
	if err != nil || len(ids) != n {
		t.Fatalf("OfferBatch(%v, %v) = %q, %v", values, delay, ids, err)
	}
	for i, v := range values {
		s.m.ids[v] = ids[i]
		s.m.alive[v] = true
		s.m.schedule(modelItem{val: v, enq: s.m.now}, ids[i], s.m.now+delay.Milliseconds())
	}
	s.m.cov.batches++
}

func (s *modelMachine) remove(t *rapid.T) {
	id := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "id")
	removed, err := s.dq.Remove(s.ctx, id)
	if err != nil {
		t.Fatalf("Remove(%q): %v", id, err)
	}
	i := s.m.pendingField(id)
	if removed != (i >= 0) {
		t.Fatalf("Remove(%q) = %v, model has it pending: %v", id, removed, i >= 0)
	}
	if i >= 0 {
		delete(s.m.alive, s.m.pending[i].val)
		s.m.pending = slices.Delete(s.m.pending, i, i+1)
		s.m.cov.removes++
	}
}

func (s *modelMachine) receive(t *rapid.T) {
	if s.m.lagging() {
		// The transfer a Receive starts would race with it.
		t.Skip("transfer overdue")
	}
	if len(s.m.ready) == 0 {
		s.expectNothingReady(t)
		return
	}
	n := rapid.IntRange(1, 3).Draw(t, "count")
	for range min(n, len(s.m.ready)) {
		q := s.q
		if s.transient {
			q = blocking.New[int](s.rdb, modelName, s.options()...)
		}
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		d, err := q.Receive(ctx)
		cancel()
		if s.transient {
			_ = q.Close() // its delivery can still be settled
		}
		if err != nil {
			t.Fatalf("Receive with %s next in the model: %v", s.m.fmtItem(s.m.ready[0]), err)
		}
		token, l := s.m.receive()
		want := s.m.fmtItem(l.modelItem)
		if s.m.ids[d.Value] == "" && d.Value == l.val {
			s.m.ids[d.Value] = d.ID
		}
		got := modelFmt(modelItem{
			val: d.Value, attempt: d.Attempt, errText: d.Headers[blocking.HeaderError],
			enq: d.EnqueuedAt.UnixMilli(), due: d.DueAt.UnixMilli(),
		}, d.ID)
		if got != want {
			t.Fatalf("Receive:\n  got  %s\n  want %s", got, want)
		}
		s.handles = append(s.handles, modelHandle{d: d, token: token})
	}
}

// expectNothingReady receives on a short-lived queue whose client blocks
// only briefly, since the queue's own client blocks for 500 ms per try.
func (s *modelMachine) expectNothingReady(t *rapid.T) {
	probe := blocking.New[int](s.probeRDB, modelName, s.options()...)
	defer probe.Close()
	ctx, cancel := context.WithTimeout(s.ctx, modelProbeWait)
	defer cancel()
	d, err := probe.Receive(ctx)
	var netErr net.Error
	switch {
	case err == nil:
		t.Fatalf("Receive on a queue the model holds empty: got %s (attempt %d)", modelFmt(modelItem{val: d.Value}, d.ID), d.Attempt)
	case errors.Is(err, context.DeadlineExceeded):
	case errors.As(err, &netErr) && netErr.Timeout():
		// The probe client's short read timeout cut a reply off (a slow
		// machine). Nothing was ready, so nothing was lost; the state
		// check after this step verifies that.
	default:
		t.Fatalf("Receive on an empty queue = %v, want DeadlineExceeded", err)
	}
	s.m.cov.probes++
}

// pick draws a received delivery while the model holds a lease: mostly a
// held one, sometimes any delivery ever received (often settled or lost).
func (s *modelMachine) pick(t *rapid.T) modelHandle {
	var held []int
	for i, h := range s.handles {
		if _, ok := s.m.leases[h.token]; ok {
			held = append(held, i)
		}
	}
	if len(held) == 0 {
		// Skip before drawing anything: rapid ends a check early when
		// actions are rejected after drawing.
		t.Skip("no lease held")
	}
	if rapid.IntRange(0, 3).Draw(t, "pickAny") < 3 {
		return s.handles[rapid.SampledFrom(held).Draw(t, "held")]
	}
	return s.handles[rapid.IntRange(0, len(s.handles)-1).Draw(t, "any")]
}

// settled checks err against the model's lease and reports whether the
// lease was held (the operation took effect).
func (s *modelMachine) settled(t *rapid.T, op string, h modelHandle, err error) bool {
	l, held := s.m.leases[h.token]
	switch {
	case held && err == nil && l.deadline <= s.m.now:
		// Expired but not reclaimed yet: the lease still holds.
		s.m.cov.settleExpired++
	case held && err != nil:
		t.Fatalf("%s of v%d (lease %s, held): %v", op, h.d.Value, h.token, err)
	case !held && !errors.Is(err, blocking.ErrLeaseLost):
		t.Fatalf("%s of v%d (lease %s, lost) = %v, want ErrLeaseLost", op, h.d.Value, h.token, err)
	case !held:
		s.m.cov.lostSettles++
	}
	return held
}

func (s *modelMachine) ack(t *rapid.T) {
	h := s.pick(t)
	if s.settled(t, "Ack", h, h.d.Ack(s.ctx)) {
		delete(s.m.alive, s.m.leases[h.token].val)
		delete(s.m.leases, h.token)
		s.m.cov.acks++
	}
}

func (s *modelMachine) nack(t *rapid.T) {
	h := s.pick(t)
	delay := rapid.SampledFrom(modelDelays).Draw(t, "delay")
	reason := rapid.SampledFrom([]string{"", "handler failed"}).Draw(t, "reason")
	var opts []blocking.NackOption
	if reason != "" {
		opts = append(opts, blocking.WithReason(errors.New(reason)))
	} else {
		reason = "nacked"
	}
	if s.settled(t, "Nack", h, h.d.Nack(s.ctx, delay, opts...)) {
		s.m.nack(h.token, delay, reason)
	}
}

func (s *modelMachine) extend(t *rapid.T) {
	h := s.pick(t)
	by := rapid.SampledFrom([]time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second}).Draw(t, "by")
	if s.settled(t, "Extend", h, h.d.Extend(s.ctx, by)) {
		l := s.m.leases[h.token]
		l.deadline = s.m.now + by.Milliseconds()
		s.m.leases[h.token] = l
		s.m.cov.extends++
	}
}

// advance moves the frozen clock and runs one transfer step, as one action
// so that the background worker never sees a time the model has not
// processed.
func (s *modelMachine) advance(t *rapid.T) {
	d := time.Duration(rapid.IntRange(1, 30).Draw(t, "halfSeconds")) * 500 * time.Millisecond
	s.m.advance(d)
	s.mr.SetTime(time.UnixMilli(s.m.now))
	err := transfer.RunOnce(s.ctx, s.rdb, transfer.Target{Keys: s.k, MaxAttempts: s.m.max})
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	// If the worker reclaimed exhausted leases before RunOnce did, it may
	// still be dead-lettering them: wait until only the model's leases are
	// in flight (a wrong model times out here and fails the check below).
	deadline := time.Now().Add(modelQuiesce)
	for {
		n, err := s.rdb.HLen(s.ctx, s.k.Inflight).Result()
		if err != nil {
			t.Fatalf("HLEN inflight: %v", err)
		}
		if n == int64(len(s.m.leases)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
}

// lag moves the frozen clock without a transfer step: due items stay
// pending and expired leases stay held until the next advance. Only with
// transient receivers, as q's worker would notice the new time on its own.
func (s *modelMachine) lag(t *rapid.T) {
	if !s.transient {
		t.Skip("q's transfer worker is running")
	}
	if len(s.m.pending) > 0 && s.m.pending[0].due > s.m.now && rapid.Bool().Draw(t, "toNextDue") {
		// Exactly to the earliest due time: that item is due, not moved.
		s.m.now = s.m.pending[0].due
	} else {
		s.m.now += 500 * int64(rapid.IntRange(1, 30).Draw(t, "halfSeconds"))
	}
	s.mr.SetTime(time.UnixMilli(s.m.now))
	s.m.cov.lags++
}

func (s *modelMachine) redrive(t *rapid.T) {
	limit := rapid.IntRange(0, 2).Draw(t, "max")
	n, err := s.q.Redrive(s.ctx, limit)
	if err != nil {
		t.Fatalf("Redrive(%d): %v", limit, err)
	}
	if want := s.m.redrive(limit); n != want {
		t.Fatalf("Redrive(%d) = %d, model moves %d", limit, n, want)
	}
}

// modelStored is an item read back from Redis.
type modelStored struct {
	item modelItem
	id   string
}

func modelDecode(raw string) (modelStored, error) {
	e, err := envelope.Unmarshal([]byte(raw))
	if err != nil {
		return modelStored{}, err
	}
	var v int
	if err := codec.Msgpack().Unmarshal(e.Payload, &v); err != nil {
		return modelStored{}, fmt.Errorf("item %s: %w", e.ID, err)
	}
	return modelStored{
		item: modelItem{
			val: v, attempt: e.Attempt, errText: e.Headers[blocking.HeaderError],
			enq: e.EnqueuedAt.UnixMilli(), due: e.DueAt.UnixMilli(),
		},
		id: e.ID,
	}, nil
}

// modelState is the stored state, each part as lines to compare.
type modelState struct {
	ready, pending, leases, dead []string
	values                       []int // every stored item's value
}

// read loads the queue's keys. The model's unknown IDs (generated by
// blocking.Queue.Offer) are learnt from the first stored copy seen.
func (s *modelMachine) read(t *rapid.T) modelState {
	var st modelState
	t0 := modelT0.UnixMilli()
	learn := func(raw string) modelStored {
		it, err := modelDecode(raw)
		if err != nil {
			t.Fatalf("stored item: %v", err)
		}
		if s.m.alive[it.item.val] && s.m.ids[it.item.val] == "" {
			s.m.ids[it.item.val] = it.id
		}
		st.values = append(st.values, it.item.val)
		return it
	}
	list := func(key string) []string {
		raws, err := s.rdb.LRange(s.ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatalf("LRANGE %s: %v", key, err)
		}
		slices.Reverse(raws) // RPOP order: next to be received first
		var lines []string
		for _, raw := range raws {
			it := learn(raw)
			lines = append(lines, modelFmt(it.item, it.id))
		}
		return lines
	}
	st.ready = list(s.k.Ready)
	st.dead = list(s.k.Dead().Ready)

	members, err := s.rdb.ZRangeWithScores(s.ctx, s.k.Delayed, 0, -1).Result()
	if err != nil {
		t.Fatalf("ZRANGE delayed: %v", err)
	}
	items, err := s.rdb.HGetAll(s.ctx, s.k.Items).Result()
	if err != nil {
		t.Fatalf("HGETALL items: %v", err)
	}
	if len(items) != len(members) {
		t.Fatalf("delayed set holds %d members, items hash %d fields", len(members), len(items))
	}
	for _, z := range members {
		member := z.Member.(string)
		if len(member) < lua.SeqLen {
			t.Fatalf("delayed member %q is shorter than its seq prefix", member)
		}
		seqBytes, field := member[:lua.SeqLen], member[lua.SeqLen:]
		var seq int64
		for i := range lua.SeqLen {
			seq = seq<<8 | int64(seqBytes[i])
		}
		val, ok := items[field]
		if !ok || !strings.HasPrefix(val, seqBytes) {
			t.Fatalf("delayed member %q has items-hash value starting %q", member, val[:min(len(val), lua.SeqLen)])
		}
		it := learn(val[lua.SeqLen:])
		st.pending = append(st.pending, fmt.Sprintf("seq=%d field=%s score=%+dµs %s", seq, field, int64(z.Score)-t0*1000, modelFmt(it.item, it.id)))
	}

	leases, err := s.rdb.ZRangeWithScores(s.ctx, s.k.Leases, 0, -1).Result()
	if err != nil {
		t.Fatalf("ZRANGE leases: %v", err)
	}
	inflight, err := s.rdb.HGetAll(s.ctx, s.k.Inflight).Result()
	if err != nil {
		t.Fatalf("HGETALL inflight: %v", err)
	}
	if len(inflight) != len(leases) {
		t.Fatalf("leases set holds %d tokens, inflight hash %d", len(leases), len(inflight))
	}
	for _, z := range leases {
		token := z.Member.(string)
		raw, ok := inflight[token]
		if !ok {
			t.Fatalf("lease %s has no inflight envelope", token)
		}
		it := learn(raw)
		it.item.attempt++ // stored: deliveries before this one
		st.leases = append(st.leases, fmt.Sprintf("token=%s deadline=%+d %s", token, int64(z.Score)-t0, modelFmt(it.item, it.id)))
	}
	return st
}

// want renders the model as modelState lines.
func (m *queueModel) want() modelState {
	var st modelState
	t0 := modelT0.UnixMilli()
	for _, it := range m.ready {
		st.ready = append(st.ready, m.fmtItem(it))
	}
	for _, it := range m.dead {
		st.dead = append(st.dead, m.fmtItem(it))
	}
	for _, p := range m.pending {
		st.pending = append(st.pending, fmt.Sprintf("seq=%d field=%s score=%+dµs %s", p.seq, p.field, (p.due-t0)*1000, m.fmtItem(p.modelItem)))
	}
	for _, token := range m.leaseOrder(func(modelLease) bool { return true }) {
		l := m.leases[token]
		st.leases = append(st.leases, fmt.Sprintf("token=%s deadline=%+d %s", token, l.deadline-t0, m.fmtItem(l.modelItem)))
	}
	return st
}

func (s *modelMachine) check(t *rapid.T) {
	if !s.transient && s.m.lagging() {
		t.Fatalf("model bug: a transfer step is overdue while q's worker runs")
	}
	sizes := []struct {
		what string
		size func(context.Context) (int64, error)
		want int
	}{
		{"Queue.Size", s.q.Size, len(s.m.ready)},
		{"DeadLetters().Size", s.q.DeadLetters().Size, len(s.m.dead)},
		{"delayed Queue.Size", s.dq.Size, len(s.m.pending)},
	}
	for _, c := range sizes {
		if n, err := c.size(s.ctx); err != nil || n != int64(c.want) {
			t.Fatalf("%s = %d, %v; model has %d", c.what, n, err, c.want)
		}
	}

	got := s.read(t)

	// Nothing lost, nothing duplicated: every value offered and neither
	// acked nor removed is stored exactly once, and nothing else is.
	count := map[int]int{}
	for _, v := range got.values {
		count[v]++
	}
	for v := range s.m.alive {
		if count[v] != 1 {
			t.Fatalf("v%d (offered, not acked) is stored %d times", v, count[v])
		}
	}
	for v, n := range count {
		if !s.m.alive[v] {
			t.Fatalf("v%d is stored %d times after it was acked or removed", v, n)
		}
	}

	want := s.m.want()
	for _, part := range []struct {
		what      string
		got, want []string
	}{
		{"ready list (next first)", got.ready, want.ready},
		{"delayed set", got.pending, want.pending},
		{"leases", got.leases, want.leases},
		{"dead letters (oldest first)", got.dead, want.dead},
	} {
		if !slices.Equal(part.got, part.want) {
			t.Fatalf("%s at %+d ms:\n  stored:\n    %s\n  model:\n    %s", part.what, s.m.now-modelT0.UnixMilli(),
				strings.Join(part.got, "\n    "), strings.Join(part.want, "\n    "))
		}
	}
}

func TestModel(t *testing.T) {
	var cov modelCoverage
	rapid.Check(t, func(t *rapid.T) {
		s := newModelMachine(t, &cov)
		defer s.close()
		t.Repeat(s.actions())
	})
	t.Logf("coverage: %+v", cov)
}
