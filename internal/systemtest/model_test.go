package systemtest_test

// TestModel is a model-based property test of at-least-once delivery: rapid
// draws sequences of steps, runs each against a queue and against an
// in-memory model of the scripts in internal/lua, and after every step
// compares the whole stored state with the model.
//
// Steps: offers (blocking.Queue.Offer, delayed Offer, OfferAt and
// OfferBatch; with and without WithID and WithHeaders; of ints, of strings
// a Queue[int] cannot decode, and of bytes that are no envelope at all),
// Remove and Clear, Receive (of what is ready, through the claimed list
// after skipping what it cannot return, or waiting while an item is
// offered; on an empty queue, a probe that must time out), Poll(0) (by the
// consumer, or by "another process" whose own max attempts the meta hash
// then records), Ack, Nack (delay 0 or more, with and without WithReason),
// Extend, a receive and nack on the dead-letter queue (which counts its own
// deliveries), Redrive, and clock moves.
//
// State compared after every step: the ready list in order; the delayed set
// (sequence numbers, members, items-hash fields, scores) in order; the retry
// set (nonces, scores) in order; leases (tokens, deadlines) with their
// inflight envelopes; the dead letters in order; the claimed list (empty
// between steps); the meta hashes of the queue and of its dead letters; the
// offer counter; the set of keys (lane keys are only checked for their form,
// nonce|statuses, and a TTL of at most store.LaneTTL); and the sizes the
// public API reports. Every stored item's envelope is compared field by
// field (ID, attempt counter, error header, producer headers, enqueued and
// due times), every delivery returned likewise, and every value offered
// and neither acked, taken nor removed must be stored exactly once.
//
// It runs as two subtests:
//
//   - "miniredis": the server clock is frozen (SetTime) and the scripts read
//     it with TIME, so every time is exact. The "advance" step moves the
//     clock (by half seconds, or exactly to the next due time or lease
//     deadline) and runs mover.RunOnce in one step: due items (delayed
//     and retries, merged in due order) move and expired leases are
//     reclaimed at a point the model knows.
//   - "redis": a real redis-server (redistest.Standalone, a queue name of
//     its own per check), whose clock cannot be stopped. Only steps whose
//     outcome does not depend on time within the test are drawn: delays of
//     0 or of an hour or more, due times an hour away, leases of an hour, no
//     clock step. Times are known to lie between the clock readings taken
//     around each call (the server runs on this machine); the model keeps
//     them as intervals, checks stored times against them (5 ms slack) and
//     then narrows them to what was stored. Values a Queue[int] cannot
//     decode are drawn only while the queue's max attempts is 1 (they are
//     dead-lettered at their first delivery instead of coming back after a
//     backoff of about a second, which would race with the test).
//
// Each check also draws the consumers' max attempts (1 to 3, or unset: the
// default 10, recorded nowhere), their visibility timeout, and how they run:
//
//   - "worker": the consuming queue runs its own transfer worker, as in
//     production. Between two advances it finds nothing due and nothing
//     expired (the model asserts so); during an advance it may do some of
//     what RunOnce does, which ends in the same state (transfers append,
//     reclaims prepend, each script is atomic).
//   - "fenced": consumers use a client whose hook refuses the transfer and
//     reclaim scripts, so their workers never move anything. The "lag" step
//     may then move the clock without a transfer, which reaches the states
//     a late transfer leaves: items due but still pending (a zero-delay
//     offer or nack then queues behind them), leases expired but not yet
//     reclaimed (still settleable and extendable).
//
// Lease tokens are chosen by the client (a random prefix and an index), so
// the model cannot predict them, and a Delivery does not expose its token.
// The model names a lease by a serial number of its own, given when the
// Delivery is returned, and learns the token from the state check that
// follows: values are unique per check and an item is stored at most once,
// so the inflight envelope holding the delivery's value is its lease. From
// then on the token is compared exactly, and it orders reclaims (ties on
// deadline) and retries (a nack's retry member is keyed by the lease's
// token). The nonce of a retry scheduled for an item the consumer could
// not decode, and the due time drawn with jitter for it, are learnt the
// same way (matched by value, checked against the range the backoff
// allows). Whether a settle reached the lease it was meant for is checked
// by its effect on the stored state.
//
// Settling a delivery whose lease Redis no longer holds succeeds when the
// lease surely had not expired by the local clock (go-redis may have sent
// the settlement twice, and the first send did it), and fails with
// ErrLeaseLost otherwise. With the server clock frozen and moved by hand,
// both happen: the model knows the local time window in which the Delivery
// takes its lease to be held, and accepts either outcome only when a call
// straddles its end. A settled delivery settled again fails with
// ErrLeaseLost and changes nothing.
//
// Each check is a fresh queue and about 30 steps; the check count is
// rapid's (-rapid.checks, 100 by default). A probe costs a blocked wait
// (on a real server, up to its 100 ms timer tick), so at most one is drawn
// per emptying of the queue, and on the real server one per check.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
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
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

const (
	// modelProbeWait bounds a Receive the model expects to find nothing.
	modelProbeWait = 20 * time.Millisecond
	// modelReceiveWait bounds a Receive the model expects to return.
	modelReceiveWait = 10 * time.Second
)

// modelT0 is the frozen miniredis clock at the start of every check.
var modelT0 = time.UnixMilli(1_767_225_600_000) // 2026-01-01T00:00:00Z

// modelBackend is what one subtest draws from.
type modelBackend struct {
	real         bool            // a real redis-server: the clock runs
	delays       []time.Duration // offers and nacks; zero, listed twice, is drawn more often
	offsets      []time.Duration // OfferAt: due = now + offset
	extends      []time.Duration
	visibilities []time.Duration
	slackUS      int64 // allowed gap between a stored time and the model's interval
}

var (
	modelOnMiniredis = modelBackend{
		delays:  []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 5 * time.Second},
		offsets: []time.Duration{-time.Second, 0, 500 * time.Millisecond, 5 * time.Second},
		extends: []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second},
		// A 10 ms lease is soon past its visibility timeout by the local
		// clock too, so settling it once the reclaimer took it back fails
		// with ErrLeaseLost; a longer one succeeds (see the file comment).
		visibilities: []time.Duration{10 * time.Millisecond, 2 * time.Second, 10 * time.Second},
	}
	modelOnRedis = modelBackend{
		real:         true,
		delays:       []time.Duration{0, 0, time.Hour, 2 * time.Hour},
		offsets:      []time.Duration{-time.Hour, 0, time.Hour, 2 * time.Hour},
		extends:      []time.Duration{time.Hour, 2 * time.Hour},
		visibilities: []time.Duration{time.Hour},
		slackUS:      5000,
	}
)

// modelKind is what an item holds.
type modelKind int

const (
	modelInt     modelKind = iota // an int: what the consumers read
	modelStr                      // an envelope with a string: a Queue[int] cannot decode it
	modelGarbage                  // bytes that are no envelope
)

func (k modelKind) String() string { return [...]string{"int", "str", "garbage"}[k] }

// span is a time the model knows to lie in [lo, hi]; lo == hi on miniredis.
type span struct{ lo, hi int64 }

func exactly(v int64) span               { return span{v, v} }
func (s span) plus(d int64) span         { return span{s.lo + d, s.hi + d} }
func (s span) ms() span                  { return span{s.lo / 1000, s.hi / 1000} }
func (s span) holds(v, slack int64) bool { return s.lo-slack <= v && v <= s.hi+slack }
func (s span) compare(o span) int        { return cmp.Or(cmp.Compare(s.lo, o.lo), cmp.Compare(s.hi, o.hi)) }

// format renders s relative to base.
func (s span) format(base int64) string {
	if s.lo == s.hi {
		return fmt.Sprintf("%+d", s.lo-base)
	}
	return fmt.Sprintf("[%+d,%+d]", s.lo-base, s.hi-base)
}

// modelItem is one item as stored: an envelope, or bytes that are none.
type modelItem struct {
	val     int
	kind    modelKind
	id      string
	attempt int               // the envelope's counter: deliveries that failed
	errText string            // Headers[HeaderError], "" when absent
	headers map[string]string // the producer's headers
	enq     span              // EnqueuedAt, Unix ms
	due     span              // DueAt, Unix ms
}

// fields renders what must match exactly.
func (it *modelItem) fields() string {
	if it.kind == modelGarbage {
		return fmt.Sprintf("v%d garbage", it.val)
	}
	return fmt.Sprintf("v%d %s id=%s attempt=%d err=%q hdr=%v", it.val, it.kind, it.id, it.attempt, it.errText, it.headers)
}

func (it *modelItem) format(baseMS int64) string {
	if it.kind == modelGarbage {
		return it.fields()
	}
	return fmt.Sprintf("%s enq=%s due=%s", it.fields(), it.enq.format(baseMS), it.due.format(baseMS))
}

func modelGarbageRaw(val int) string { return fmt.Sprintf("garbage-%d", val) }
func modelStrValue(val int) string   { return fmt.Sprintf("s%d", val) }
func modelHeaders(val int) map[string]string {
	return map[string]string{"trace-id": fmt.Sprintf("t%d", val)}
}

// modelDecodeReason is the failure a Queue[int] records for a str item.
func modelDecodeReason(it *modelItem) string {
	c := codec.Msgpack()
	payload, err := c.Marshal(modelStrValue(it.val))
	if err != nil {
		panic(err)
	}
	var v int
	err = c.Unmarshal(payload, &v)
	if err == nil {
		panic("a msgpack string decodes as an int")
	}
	return fmt.Sprintf("item %s: decode with %s codec: %v", it.id, c.Name(), err)
}

// modelPending is an item in the delayed set.
type modelPending struct {
	it    *modelItem
	seq   int64 // the member's sequence prefix
	score span  // due, Unix µs
}

// modelRetry is an item in the retry set.
type modelRetry struct {
	it    *modelItem
	score span   // due, Unix µs
	nonce string // the member's nonce: the lease token (Take: a random one); "" until learnt
}

// modelLease is a received item that is neither settled nor reclaimed.
type modelLease struct {
	it       *modelItem // as stored in the inflight hash
	serial   int
	token    string // "" until learnt
	deadline span   // Unix ms
}

// modelCoverage counts the transitions the checks went through, so that a
// reader of -v output can see the model is exercised, not just satisfied.
type modelCoverage struct {
	checks, steps                                              int
	offers, strOffers, garbage, delayedOffers, offerAts        int
	batches, duplicates, offerBehindDue, removes, clears       int
	receives, claimedPath, probes, takes, emptyTakes, joins    int
	acks, extends, nackRetry, nackReady, nackDead              int
	nackBehindDue, settleExpired, lostUnseen, lostSeen, twice  int
	deadGarbage, decodeRetry, decodeDead                       int
	transferred, retriesMoved, reclaimed, expiredDead, redrive int
	advances, lags, tiedReclaims, deadNacks, waiting           int
}

// queueModel mirrors the scripts in internal/lua.
type queueModel struct {
	t        *rapid.T
	cov      *modelCoverage
	cfgMax   int   // the consumers' max attempts when the meta hash has none
	meta     int   // max_attempts in the meta hash; 0 when absent
	deadMeta int   // max_attempts in the dead-letter queue's meta hash
	now      span  // server clock, Unix µs
	seq      int64 // redelay:{q}:seq
	ready    []*modelItem
	pending  []*modelPending // in (score, seq) order
	retry    []*modelRetry   // in (score, member) order
	leases   map[int]*modelLease
	dead     []*modelItem // oldest first
	alive    map[int]bool // stored: offered, and neither acked, taken nor removed
	nextVal  int
	serial   int
}

func (m *queueModel) newItem(kind modelKind) *modelItem {
	m.nextVal++
	return &modelItem{val: m.nextVal, kind: kind}
}

// maxAttempts is the limit a script applies: the meta hash's, or the
// caller's.
func (m *queueModel) maxAttempts(fallback int) int {
	if m.meta > 0 {
		return m.meta
	}
	return fallback
}

// before reports a < b, failing when the intervals do not tell.
func (m *queueModel) before(a, b span) bool {
	switch {
	case a.hi < b.lo:
		return true
	case a.lo >= b.hi:
		return false
	}
	m.t.Fatalf("model: cannot order %v and %v", a, b)
	return false
}

// nothingDueBy reports whether every pending item and retry is due after
// due: the scripts' "min_due > due_us".
func (m *queueModel) nothingDueBy(due span) bool {
	for _, p := range m.pending {
		if !m.before(due, p.score) {
			return false
		}
	}
	for _, r := range m.retry {
		if !m.before(due, r.score) {
			return false
		}
	}
	return true
}

func (m *queueModel) sortSets() {
	slices.SortStableFunc(m.pending, func(a, b *modelPending) int {
		return cmp.Or(a.score.compare(b.score), cmp.Compare(a.seq, b.seq))
	})
	// Members are a length byte, the nonce, the envelope: nonces are unique.
	slices.SortStableFunc(m.retry, func(a, b *modelRetry) int {
		return cmp.Or(a.score.compare(b.score), cmp.Compare(len(a.nonce), len(b.nonce)), strings.Compare(a.nonce, b.nonce))
	})
}

func (m *queueModel) pendingID(id string) int {
	return slices.IndexFunc(m.pending, func(p *modelPending) bool { return p.it.id == id })
}

// offerReady is offer.lua's mode 'r' (blocking.Queue.Offer).
func (m *queueModel) offerReady(it *modelItem) {
	it.enq, it.due = m.now.ms(), m.now.ms()
	m.ready = append(m.ready, it)
	m.alive[it.val] = true
}

// offerDelayed is offer.lua's modes 'd' and 'a' for one item: a duplicate
// of a pending ID is dropped; an item due now goes to the ready tail when
// nothing pending is due at or before it; the rest is pending.
func (m *queueModel) offerDelayed(it *modelItem, due span, dueNow bool) int {
	if m.pendingID(it.id) >= 0 {
		m.cov.duplicates++
		return lua.OfferDuplicate
	}
	it.enq, it.due = m.now.ms(), due.ms()
	m.alive[it.val] = true
	if dueNow && m.nothingDueBy(due) {
		m.ready = append(m.ready, it)
		return lua.OfferReady
	}
	if dueNow {
		m.cov.offerBehindDue++
	}
	m.seq++
	m.pending = append(m.pending, &modelPending{it: it, seq: m.seq, score: due})
	m.sortSets()
	return lua.OfferPending
}

// bury dead-letters it with why in its error header.
func (m *queueModel) bury(it *modelItem, why string) {
	it.errText = why
	it.attempt = 0
	m.dead = append(m.dead, it)
}

// modelBackoff is the range of blocking.DefaultBackoff(attempt), in µs.
func modelBackoff(attempt int) (lo, hi int64) {
	d := 10 * time.Minute
	if attempt >= 1 && attempt <= 20 {
		d = min(time.Second<<(attempt-1), d)
	}
	return int64(float64(d)*0.8)/1000 - 1, int64(float64(d)*1.2)/1000 + 1
}

// failDecode is settle.lua for an item the consumer could not decode
// (failReceived, failTaken): retried after the default backoff, or
// dead-lettered after its last attempt.
func (m *queueModel) failDecode(it *modelItem, fallback int) {
	attempt := it.attempt + 1
	max := m.maxAttempts(fallback)
	reason := modelDecodeReason(it)
	if attempt >= max {
		m.bury(it, fmt.Sprintf("%s (attempt %d of %d)", reason, attempt, max))
		m.cov.decodeDead++
		return
	}
	lo, hi := modelBackoff(attempt)
	score := span{m.now.lo + lo, m.now.hi + hi}
	it.errText, it.attempt, it.due = reason, attempt, score.ms()
	m.retry = append(m.retry, &modelRetry{it: it, score: score})
	m.sortSets()
	m.cov.decodeRetry++
}

// receive is one Receive: receive.lua (and its claimed path after a wait)
// until it leases an item; bytes that are no envelope are dead-lettered on
// the way, items that do not decode are failed. It returns nil when no
// item is left that Receive can return (the call then blocks).
func (m *queueModel) receive(fallback int, vis time.Duration) *modelLease {
	skipped := false
	for len(m.ready) > 0 {
		it := m.ready[0]
		m.ready = m.ready[1:]
		switch it.kind {
		case modelGarbage:
			m.dead = append(m.dead, it)
			m.cov.deadGarbage++
		case modelStr:
			m.failDecode(it, fallback)
		default:
			m.serial++
			l := &modelLease{it: it, serial: m.serial, deadline: m.now.ms().plus(vis.Milliseconds())}
			m.leases[l.serial] = l
			m.cov.receives++
			if skipped {
				m.cov.claimedPath++
			}
			return l
		}
		skipped = true
	}
	return nil
}

// take is one Poll(0): pops until it finds an item it can return.
func (m *queueModel) take(fallback int) *modelItem {
	for len(m.ready) > 0 {
		it := m.ready[0]
		m.ready = m.ready[1:]
		switch it.kind {
		case modelGarbage:
			m.dead = append(m.dead, it)
			m.cov.deadGarbage++
		case modelStr:
			m.failDecode(it, fallback)
		default:
			delete(m.alive, it.val)
			m.cov.takes++
			return it
		}
	}
	return nil
}

func (m *queueModel) readyHasInt() bool {
	return slices.ContainsFunc(m.ready, func(it *modelItem) bool { return it.kind == modelInt })
}

func (m *queueModel) ack(l *modelLease) {
	delete(m.leases, l.serial)
	delete(m.alive, l.it.val)
	m.cov.acks++
}

// nack is settle.lua for a lease: dead-lettered after its last attempt, else
// a retry due after delay, straight to the ready tail when that is now and
// nothing pending is due at or before it.
func (m *queueModel) nack(l *modelLease, delay time.Duration, reason string, fallback int) {
	delete(m.leases, l.serial)
	it := l.it
	attempt := it.attempt + 1
	max := m.maxAttempts(fallback)
	if attempt >= max {
		m.bury(it, fmt.Sprintf("%s (attempt %d of %d)", reason, attempt, max))
		m.cov.nackDead++
		return
	}
	due := m.now.plus(delay.Microseconds())
	it.errText, it.attempt, it.due = reason, attempt, due.ms()
	if delay == 0 && m.nothingDueBy(due) {
		m.ready = append(m.ready, it)
		m.cov.nackReady++
		return
	}
	if l.token == "" {
		m.t.Fatalf("model: the token of v%d's lease is not known", it.val)
	}
	if delay == 0 {
		m.cov.nackBehindDue++
	}
	m.retry = append(m.retry, &modelRetry{it: it, score: due, nonce: l.token})
	m.sortSets()
	m.cov.nackRetry++
}

// le reports a <= b, failing when the intervals do not tell.
func (m *queueModel) le(a, b span) bool { return !m.before(b, a) }

// lagging reports whether a transfer step is overdue: an item pending
// though due, or a lease expired but not reclaimed.
func (m *queueModel) lagging() bool {
	for _, p := range m.pending {
		if m.le(p.score, m.now) {
			return true
		}
	}
	for _, r := range m.retry {
		if m.le(r.score, m.now) {
			return true
		}
	}
	for _, l := range m.leases {
		if m.le(l.deadline, m.now.ms()) {
			return true
		}
	}
	return false
}

// nextEvent is the earliest time after now at which something falls due or
// a lease expires, in µs.
func (m *queueModel) nextEvent() (int64, bool) {
	next, ok := int64(0), false
	consider := func(t int64) {
		if t > m.now.hi && (!ok || t < next) {
			next, ok = t, true
		}
	}
	for _, p := range m.pending {
		consider(p.score.lo)
	}
	for _, r := range m.retry {
		consider(r.score.lo)
	}
	for _, l := range m.leases {
		consider(l.deadline.lo * 1000)
	}
	return next, ok
}

// runOnce is what mover.RunOnce does: transfer.lua (due items of the
// delayed and retry sets to the ready tail, merged in due order, a delayed
// item first on a tie), then reclaim.lua (expired leases in the sorted
// set's order, deadline then token, back at the head of the ready list in
// that order with the failed delivery counted, or dead-lettered after their
// last attempt).
func (m *queueModel) runOnce() {
	for {
		pDue := len(m.pending) > 0 && m.le(m.pending[0].score, m.now)
		rDue := len(m.retry) > 0 && m.le(m.retry[0].score, m.now)
		switch {
		case pDue && (!rDue || m.le(m.pending[0].score, m.retry[0].score)):
			m.ready = append(m.ready, m.pending[0].it)
			m.pending = m.pending[1:]
			m.cov.transferred++
			continue
		case rDue:
			m.ready = append(m.ready, m.retry[0].it)
			m.retry = m.retry[1:]
			m.cov.retriesMoved++
			continue
		}
		break
	}
	nowMS := m.now.ms()
	var expired []*modelLease
	for _, l := range m.leases {
		if m.le(l.deadline, nowMS) {
			if l.token == "" {
				m.t.Fatalf("model: the token of v%d's lease is not known", l.it.val)
			}
			expired = append(expired, l)
		}
	}
	slices.SortFunc(expired, func(a, b *modelLease) int {
		return cmp.Or(a.deadline.compare(b.deadline), strings.Compare(a.token, b.token))
	})
	for i := 1; i < len(expired); i++ {
		if expired[i].deadline == expired[i-1].deadline {
			m.cov.tiedReclaims++
		}
	}
	max := m.maxAttempts(m.cfgMax)
	var back []*modelItem
	for _, l := range expired {
		delete(m.leases, l.serial)
		it := l.it
		attempt := it.attempt + 1
		if attempt >= max {
			m.bury(it, fmt.Sprintf("lease expired on attempt %d of %d", attempt, max))
			m.cov.expiredDead++
			continue
		}
		it.attempt = attempt
		it.errText = "lease expired" // its last failure
		back = append(back, it)
		m.cov.reclaimed++
	}
	m.ready = append(back, m.ready...)
}

// redrive is redrive.lua: the oldest dead letters to the ready tail, the
// attempts of envelopes reset.
func (m *queueModel) redrive(limit int) int {
	n := len(m.dead)
	if limit > 0 {
		n = min(n, limit)
	}
	for _, it := range m.dead[:n] {
		if it.kind != modelGarbage {
			it.attempt = 0
		}
		m.ready = append(m.ready, it)
	}
	m.dead = m.dead[n:]
	m.cov.redrive += n
	return n
}

// handleState is a Delivery's own view of its lease.
type handleState int

const (
	handleLeased handleState = iota
	handleSettled
	handleLost
)

// modelHandle is a delivery the test received.
type modelHandle struct {
	d      *blocking.Delivery[int]
	serial int
	state  handleState
	// The Delivery takes its lease to be held until a local time in
	// [heldLo, heldHi]: the clock readings around the call that leased or
	// last extended it, plus its duration.
	heldLo, heldHi time.Time
}

// modelEnv is what every check of a subtest shares.
type modelEnv struct {
	b     *modelBackend
	cov   *modelCoverage
	outer *testing.T
	rdb   *redis.Client // real: the shared server
	frdb  *redis.Client // real: the same, fenced
}

// modelMachine runs one check: the queue under test and the model.
type modelMachine struct {
	t      *rapid.T
	b      *modelBackend
	ctx    context.Context
	mr     *miniredis.Miniredis // nil on a real server
	rdb    *redis.Client        // producers, RunOnce and state reads
	frdb   *redis.Client        // fenced: transfer and reclaim scripts refused
	crdb   *redis.Client        // consumers': rdb, or frdb when fenced
	name   string
	k      keys.Set
	target mover.Target
	baseMS int64 // times are printed relative to this

	fenced    bool
	setsMax   bool // the consumers set WithMaxAttempts(cfgMax)
	cqWritten bool // cq recorded its max attempts
	vis       time.Duration
	opts      []blocking.Option

	q   *blocking.Queue[int]    // producer, redrive, sizes
	cq  *blocking.Queue[int]    // consumer: q, or a queue on frdb when fenced
	sq  *blocking.Queue[string] // producer of values a Queue[int] cannot decode
	dq  *delayed.Queue[int]
	dsq *delayed.Queue[string]

	m       *queueModel
	handles []*modelHandle
	// probed: a probe found the queue empty, and nothing was received or
	// taken since. A probe costs a blocked wait, so one is drawn per
	// emptying of the queue; on a real server, whose timer tick ends the
	// wait (up to 100 ms), one per check.
	probed, probedOnce bool
}

var errModelFenced = errors.New("model: transfer and reclaim are refused on this client")

// modelFence is a go-redis hook refusing the transfer and reclaim scripts.
type modelFence struct{}

func modelFenced(args []any) bool {
	if len(args) < 2 {
		return false
	}
	body, _ := args[1].(string)
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha", "evalsha_ro":
		return body == lua.Transfer.Hash() || body == lua.Reclaim.Hash()
	case "eval", "eval_ro":
		return strings.Contains(body, "\n-- transfer: ") || strings.Contains(body, "\n-- reclaim: ")
	}
	return false
}

func (modelFence) DialHook(next redis.DialHook) redis.DialHook { return next }

func (modelFence) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if modelFenced(cmd.Args()) {
			cmd.SetErr(errModelFenced)
			return errModelFenced
		}
		return next(ctx, cmd)
	}
}

func (modelFence) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if modelFenced(c.Args()) {
				for _, c := range cmds {
					c.SetErr(errModelFenced)
				}
				return errModelFenced
			}
		}
		return next(ctx, cmds)
	}
}

func newModelFencedClient(addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	c.AddHook(modelFence{})
	return c
}

func newModelMachine(t *rapid.T, env *modelEnv) *modelMachine {
	b := env.b
	s := &modelMachine{t: t, b: b, ctx: context.Background()}
	s.fenced = rapid.Bool().Draw(t, "fenced")
	s.setsMax = rapid.IntRange(0, 3).Draw(t, "setsMaxAttempts") > 0
	cfgMax := store.DefaultMaxAttempts
	if s.setsMax {
		cfgMax = rapid.IntRange(1, 3).Draw(t, "maxAttempts")
	}
	s.vis = rapid.SampledFrom(b.visibilities).Draw(t, "visibility")
	var now span
	if b.real {
		s.name = redistest.QueueName(env.outer)
		s.rdb, s.frdb = env.rdb, env.frdb
		n := time.Now()
		now = span{n.UnixMicro(), n.UnixMicro()}
		s.baseMS = n.UnixMilli()
	} else {
		s.mr = miniredis.NewMiniRedis()
		if err := s.mr.Start(); err != nil {
			t.Fatalf("miniredis: %v", err)
		}
		s.mr.SetTime(modelT0)
		s.name = "model"
		s.rdb = redis.NewClient(&redis.Options{Addr: s.mr.Addr()})
		s.frdb = newModelFencedClient(s.mr.Addr())
		now = exactly(modelT0.UnixMicro())
		s.baseMS = modelT0.UnixMilli()
	}
	k, err := keys.New(s.name)
	if err != nil {
		t.Fatalf("keys: %v", err)
	}
	s.k = k
	s.crdb = s.rdb
	if s.fenced {
		s.crdb = s.frdb
	}
	s.opts = []blocking.Option{blocking.WithVisibilityTimeout(s.vis)}
	if s.setsMax {
		s.opts = append(s.opts, blocking.WithMaxAttempts(cfgMax))
	}
	s.q = blocking.New[int](s.rdb, s.name, s.opts...)
	s.cq = s.q
	if s.fenced {
		s.cq = blocking.New[int](s.frdb, s.name, s.opts...)
	}
	s.sq = blocking.New[string](s.rdb, s.name)
	s.dq = delayed.New(s.q, delayed.WithoutTransfer())
	s.dsq = delayed.New(s.sq, delayed.WithoutTransfer())
	s.target = mover.Target{Queue: store.New(s.rdb).Partition(k), MaxAttempts: cfgMax}
	s.m = &queueModel{
		t: t, cov: env.cov, cfgMax: cfgMax, now: now,
		leases: map[int]*modelLease{}, alive: map[int]bool{},
	}
	env.cov.checks++
	return s
}

func (s *modelMachine) close() {
	_ = s.dsq.Close()
	_ = s.dq.Close()
	_ = s.sq.Close()
	_ = s.cq.Close()
	_ = s.q.Close()
	if s.b.real {
		ctx := context.Background()
		if ks, err := s.rdb.Keys(ctx, s.pattern()).Result(); err == nil && len(ks) > 0 {
			_ = s.rdb.Del(ctx, ks...).Err()
		}
		return
	}
	_ = s.frdb.Close()
	_ = s.rdb.Close()
	s.mr.Close()
}

func (s *modelMachine) pattern() string { return keys.Prefix + ":{" + s.name + "}*" }

func (s *modelMachine) actions() map[string]func(*rapid.T) {
	a := map[string]func(*rapid.T){
		"offer":        s.offer,
		"offerDelayed": s.offerDelayed,
		"offerBatch":   s.offerBatch,
		"remove":       s.remove,
		"receive":      s.receive,
		"receiveMore":  s.receive, // listed twice: drawn twice as often
		"take":         s.take,
		"ack":          s.ack,
		"nack":         s.nack,
		"extend":       s.extend,
		"deadLetter":   s.deadLetter,
		"redrive":      s.redrive,
		"":             s.check,
	}
	if !s.b.real {
		a["advance"] = s.advance
		if s.fenced {
			a["lag"] = s.lag
		}
	}
	return a
}

// call runs f and, on a real server, sets the model's clock to the
// interval of the call.
func (s *modelMachine) call(f func()) (before, after time.Time) {
	before = time.Now()
	f()
	after = time.Now()
	if s.b.real {
		s.m.now = span{before.UnixMicro(), after.UnixMicro() + 1}
	}
	return before, after
}

// strAllowed reports whether an item a Queue[int] cannot decode may be
// offered: always on miniredis; on a real server only while it would be
// dead-lettered at its first delivery (max attempts 1, and no consumer
// about to record another limit), since its retry would fall due during
// the test.
func (s *modelMachine) strAllowed() bool {
	if !s.b.real {
		return true
	}
	return s.m.maxAttempts(s.m.cfgMax) == 1 && (s.cqWritten || !s.setsMax || s.m.cfgMax == 1)
}

// strOutsideDead reports whether an item a Queue[int] cannot decode is
// stored anywhere but in the dead letters.
func (s *modelMachine) strOutsideDead() bool {
	isStr := func(it *modelItem) bool { return it.kind == modelStr }
	return slices.ContainsFunc(s.m.ready, isStr) ||
		slices.ContainsFunc(s.m.pending, func(p *modelPending) bool { return isStr(p.it) }) ||
		slices.ContainsFunc(s.m.retry, func(r *modelRetry) bool { return isStr(r.it) })
}

// drawKind draws what an offer holds: mostly an int, sometimes a value a
// Queue[int] cannot decode, and (with garbage) bytes that are no envelope.
func (s *modelMachine) drawKind(t *rapid.T, garbage bool) modelKind {
	kinds := []modelKind{modelInt, modelInt, modelInt, modelInt}
	if s.strAllowed() {
		kinds = append(kinds, modelStr)
	}
	if garbage {
		kinds = append(kinds, modelGarbage)
	}
	return rapid.SampledFrom(kinds).Draw(t, "kind")
}

// startConsuming is what the first consuming call of cq does: record the
// consumers' max attempts, when they set one.
func (s *modelMachine) startConsuming() {
	if s.setsMax && !s.cqWritten {
		s.m.meta = s.m.cfgMax
		s.cqWritten = true
	}
}

func (s *modelMachine) offer(t *rapid.T) {
	kind := s.drawKind(t, true)
	if kind == modelGarbage {
		s.garbage(t)
		return
	}
	id := rapid.SampledFrom([]string{"", "", "a", "b"}).Draw(t, "id")
	withHeaders := rapid.Bool().Draw(t, "headers")
	it := s.m.newItem(kind)
	var opts []blocking.OfferOption
	if id != "" {
		opts = append(opts, blocking.WithID(id))
	}
	if withHeaders {
		it.headers = modelHeaders(it.val)
		opts = append(opts, blocking.WithHeaders(it.headers))
	}
	var got string
	var err error
	s.call(func() {
		if kind == modelStr {
			got, err = s.sq.Offer(s.ctx, modelStrValue(it.val), opts...)
		} else {
			got, err = s.q.Offer(s.ctx, it.val, opts...)
		}
	})
	if err != nil {
		t.Fatalf("Offer(v%d %s, id %q): %v", it.val, kind, id, err)
	}
	if (id != "" && got != id) || (id == "" && len(got) != 16) {
		t.Fatalf("Offer(v%d, id %q) returned ID %q", it.val, id, got)
	}
	it.id = got
	s.m.offerReady(it)
	s.m.cov.offers++
	if kind == modelStr {
		s.m.cov.strOffers++
	}
}

func (s *modelMachine) offerDelayed(t *rapid.T) {
	kind := s.drawKind(t, false)
	id := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "id")
	withHeaders := rapid.Bool().Draw(t, "headers")
	useAt := rapid.IntRange(0, 2).Draw(t, "offerAt") == 0
	var delay, offset time.Duration
	if useAt {
		offset = rapid.SampledFrom(s.b.offsets).Draw(t, "offset")
	} else {
		delay = rapid.SampledFrom(s.b.delays).Draw(t, "delay")
	}
	it := s.m.newItem(kind)
	var opts []delayed.OfferOption
	if id != "" {
		opts = append(opts, delayed.WithID(id))
	}
	if withHeaders {
		it.headers = modelHeaders(it.val)
		opts = append(opts, delayed.WithHeaders(it.headers))
	}
	var got string
	var err error
	var due time.Time
	s.call(func() {
		switch {
		case useAt && s.b.real:
			due = time.Now().Add(offset)
		case useAt:
			due = time.UnixMicro(s.m.now.lo + offset.Microseconds())
		}
		switch {
		case useAt && kind == modelStr:
			got, err = s.dsq.OfferAt(s.ctx, modelStrValue(it.val), due, opts...)
		case useAt:
			got, err = s.dq.OfferAt(s.ctx, it.val, due, opts...)
		case kind == modelStr:
			got, err = s.dsq.Offer(s.ctx, modelStrValue(it.val), delay, opts...)
		default:
			got, err = s.dq.Offer(s.ctx, it.val, delay, opts...)
		}
	})
	what := fmt.Sprintf("Offer(v%d %s, delay %v, id %q)", it.val, kind, delay, id)
	dueSpan, dueNow := s.m.now.plus(delay.Microseconds()), delay == 0
	if useAt {
		what = fmt.Sprintf("OfferAt(v%d %s, now%+v, id %q)", it.val, kind, offset, id)
		// The due time was read before the call was sent: the server's
		// clock is at or past it when offset <= 0.
		dueSpan, dueNow = exactly(due.UnixMicro()), offset <= 0
		s.m.cov.offerAts++
	}
	if id != "" {
		it.id = id
	} else {
		it.id = got
	}
	if s.m.offerDelayed(it, dueSpan, dueNow) == lua.OfferDuplicate {
		if !errors.Is(err, delayed.ErrDuplicate) || got != "" {
			t.Fatalf("%s with %q pending = %q, %v; want ErrDuplicate", what, id, got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if (id != "" && got != id) || (id == "" && len(got) != 16) {
		t.Fatalf("%s returned ID %q", what, got)
	}
	s.m.cov.delayedOffers++
	if kind == modelStr {
		s.m.cov.strOffers++
	}
}

// offerBatch is delayed.Queue.OfferBatch (offer.lua with many items): the
// items are decided in order as single offers would be.
func (s *modelMachine) offerBatch(t *rapid.T) {
	kind := s.drawKind(t, false)
	delay := rapid.SampledFrom(s.b.delays).Draw(t, "delay")
	n := rapid.IntRange(1, 3).Draw(t, "n")
	items := make([]*modelItem, n)
	ints := make([]int, n)
	strs := make([]string, n)
	for i := range items {
		items[i] = s.m.newItem(kind)
		ints[i] = items[i].val
		strs[i] = modelStrValue(items[i].val)
	}
	var ids []string
	var err error
	s.call(func() {
		if kind == modelStr {
			ids, err = s.dsq.OfferBatch(s.ctx, strs, delay)
		} else {
			ids, err = s.dq.OfferBatch(s.ctx, ints, delay)
		}
	})
	if err != nil || len(ids) != n {
		t.Fatalf("OfferBatch(%v %s, %v) = %q, %v", ints, kind, delay, ids, err)
	}
	for i, it := range items {
		it.id = ids[i]
		if s.m.offerDelayed(it, s.m.now.plus(delay.Microseconds()), delay == 0) == lua.OfferDuplicate {
			t.Fatalf("model: generated ID %q of OfferBatch is pending already", it.id)
		}
	}
	s.m.cov.batches++
	if kind == modelStr {
		s.m.cov.strOffers += n
	}
}

// garbage stands for a foreign producer pushing bytes that are no envelope.
func (s *modelMachine) garbage(t *rapid.T) {
	it := s.m.newItem(modelGarbage)
	s.call(func() {
		if err := s.rdb.LPush(s.ctx, s.k.Ready, modelGarbageRaw(it.val)).Err(); err != nil {
			t.Fatalf("LPUSH garbage: %v", err)
		}
	})
	s.m.ready = append(s.m.ready, it)
	s.m.alive[it.val] = true
	s.m.cov.garbage++
}

func (s *modelMachine) remove(t *rapid.T) {
	if rapid.IntRange(0, 9).Draw(t, "clear") == 0 {
		if err := s.dq.Clear(s.ctx); err != nil {
			t.Fatalf("Clear: %v", err)
		}
		for _, p := range s.m.pending {
			delete(s.m.alive, p.it.val)
		}
		s.m.pending = nil
		s.m.cov.clears++
		return
	}
	candidates := []string{"a", "b", "c"}
	for _, p := range s.m.pending {
		if !slices.Contains(candidates, p.it.id) {
			candidates = append(candidates, p.it.id)
		}
	}
	id := rapid.SampledFrom(candidates).Draw(t, "id")
	removed, err := s.dq.Remove(s.ctx, id)
	if err != nil {
		t.Fatalf("Remove(%q): %v", id, err)
	}
	i := s.m.pendingID(id)
	if removed != (i >= 0) {
		t.Fatalf("Remove(%q) = %v, model has it pending: %v", id, removed, i >= 0)
	}
	if i >= 0 {
		delete(s.m.alive, s.m.pending[i].it.val)
		s.m.pending = slices.Delete(s.m.pending, i, i+1)
		s.m.cov.removes++
	}
}

func (s *modelMachine) receive(t *rapid.T) {
	if len(s.m.ready) == 0 {
		if s.probed || (s.b.real && s.probedOnce) {
			s.receiveWaiting(t)
			return
		}
		s.probe(t)
		s.probed, s.probedOnce = true, true
		return
	}
	s.probed = false
	if !s.m.readyHasInt() {
		// Receive would fail those items and then wait: drawn when an
		// item it can return follows them.
		t.Skip("nothing Receive can return is ready")
	}
	n := rapid.IntRange(1, 3).Draw(t, "count")
	for range n {
		if !s.m.readyHasInt() {
			break
		}
		s.startConsuming()
		var d *blocking.Delivery[int]
		var err error
		before, after := s.call(func() {
			ctx, cancel := context.WithTimeout(s.ctx, modelReceiveWait)
			defer cancel()
			d, err = s.cq.Receive(ctx)
		})
		l := s.m.receive(s.m.cfgMax, s.vis)
		if err != nil {
			t.Fatalf("Receive with %s next in the model: %v", l.it.format(s.baseMS), err)
		}
		s.checkDelivery(t, "Receive", d, l.it)
		s.handles = append(s.handles, &modelHandle{
			d: d, serial: l.serial, heldLo: before.Add(s.vis), heldHi: after.Add(s.vis),
		})
	}
}

// receiveWaiting receives from an empty queue while an item is offered: the
// receiver is most often waiting by then (BLMOVE to the claimed list, then
// receive.lua leases the claimed item), else it finds the item ready. The
// outcome is the same either way.
func (s *modelMachine) receiveWaiting(t *rapid.T) {
	m := s.m
	it := m.newItem(modelInt)
	s.startConsuming()
	var d *blocking.Delivery[int]
	var err, offerErr error
	var id string
	before, after := s.call(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx, cancel := context.WithTimeout(s.ctx, modelReceiveWait)
			defer cancel()
			d, err = s.cq.Receive(ctx)
		}()
		time.Sleep(5 * time.Millisecond)
		id, offerErr = s.q.Offer(s.ctx, it.val)
		<-done
	})
	if offerErr != nil {
		t.Fatalf("Offer(v%d) while a receiver waits: %v", it.val, offerErr)
	}
	it.id = id
	m.offerReady(it)
	m.cov.offers++
	l := m.receive(m.cfgMax, s.vis)
	if err != nil {
		t.Fatalf("Receive waiting for v%d: %v", it.val, err)
	}
	s.checkDelivery(t, "Receive waiting for an offer", d, l.it)
	s.handles = append(s.handles, &modelHandle{
		d: d, serial: l.serial, heldLo: before.Add(s.vis), heldHi: after.Add(s.vis),
	})
	m.cov.waiting++
	s.probed = false
}

// checkDelivery compares a delivery with the model's item (as stored: its
// attempt counter does not count this delivery).
func (s *modelMachine) checkDelivery(t *rapid.T, what string, d *blocking.Delivery[int], it *modelItem) {
	want := *it
	want.attempt++
	got := modelItem{
		val: d.Value, kind: modelInt, id: d.ID, attempt: d.Attempt,
		enq: exactly(d.EnqueuedAt.UnixMilli()), due: exactly(d.DueAt.UnixMilli()),
	}
	hdr := maps.Clone(d.Headers)
	got.errText = hdr[blocking.HeaderError]
	delete(hdr, blocking.HeaderError)
	dropStory(hdr)
	if len(hdr) > 0 {
		got.headers = hdr
	}
	if why := s.sameItem(&got, &want); why != "" {
		t.Fatalf("%s (%s):\n  got  %s\n  want %s", what, why, got.format(s.baseMS), want.format(s.baseMS))
	}
}

// probe receives from an empty queue through a queue of its own, closed at
// once: its Close waits for the wait it abandoned, so that nothing is left
// to claim an item after this step. It sets no max attempts (it settles
// nothing), so it records nothing in the meta hash.
func (s *modelMachine) probe(t *rapid.T) {
	p := blocking.New[int](s.crdb, s.name, blocking.WithVisibilityTimeout(s.vis))
	var d *blocking.Delivery[int]
	var err error
	s.call(func() {
		ctx, cancel := context.WithTimeout(s.ctx, modelProbeWait)
		defer cancel()
		d, err = p.Receive(ctx)
	})
	_ = p.Close()
	if err == nil {
		t.Fatalf("Receive on a queue the model holds empty: got v%d id=%s attempt %d", d.Value, d.ID, d.Attempt)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive on an empty queue = %v, want DeadlineExceeded", err)
	}
	s.m.cov.probes++
}

// take is Poll with a zero timeout, on cq or on a queue standing for
// another process that sets max attempts of its own (recorded in the meta
// hash by its first call).
func (s *modelMachine) take(t *rapid.T) {
	q, fallback := s.cq, s.m.cfgMax
	if rapid.IntRange(0, 3).Draw(t, "otherProcess") == 0 {
		choices := []int{1, 2, 3}
		if s.b.real && s.strOutsideDead() {
			choices = []int{1}
		}
		k := rapid.SampledFrom(choices).Draw(t, "itsMaxAttempts")
		q = blocking.New[int](s.crdb, s.name, blocking.WithVisibilityTimeout(s.vis), blocking.WithMaxAttempts(k))
		defer q.Close()
		s.m.meta, fallback = k, k
		s.m.cov.joins++
	} else {
		s.startConsuming()
	}
	var v int
	var ok bool
	var err error
	s.probed = false
	s.call(func() { v, ok, err = q.Poll(s.ctx, 0) })
	want := s.m.take(fallback)
	switch {
	case err != nil:
		t.Fatalf("Poll(0): %v", err)
	case want == nil && ok:
		t.Fatalf("Poll(0) on a queue the model holds empty = v%d", v)
	case want != nil && (!ok || v != want.val):
		t.Fatalf("Poll(0) = v%d, %v; want %s", v, ok, want.format(s.baseMS))
	case want == nil:
		s.m.cov.emptyTakes++
	}
}

// pick draws a received delivery while the model holds a lease: mostly a
// held one, sometimes any delivery ever received (often settled or lost).
func (s *modelMachine) pick(t *rapid.T) *modelHandle {
	var held []*modelHandle
	for _, h := range s.handles {
		if s.m.leases[h.serial] != nil {
			held = append(held, h)
		}
	}
	if len(held) == 0 {
		// Skip before drawing anything: rapid ends a check early when
		// actions are rejected after drawing.
		t.Skip("no lease held")
	}
	if rapid.IntRange(0, 3).Draw(t, "pickAny") < 3 {
		return rapid.SampledFrom(held).Draw(t, "held")
	}
	return rapid.SampledFrom(s.handles).Draw(t, "any")
}

// settled checks a settlement's error against the model and the delivery's
// view, and reports whether it took effect (the model's lease was held).
func (s *modelMachine) settled(t *rapid.T, op string, h *modelHandle, before, after time.Time, err error) bool {
	l := s.m.leases[h.serial]
	lost := errors.Is(err, blocking.ErrLeaseLost)
	what := fmt.Sprintf("%s of v%d (delivery %d)", op, h.d.Value, h.serial)
	switch {
	case h.state != handleLeased:
		if !lost {
			t.Fatalf("%s, settled or found lost before: %v, want ErrLeaseLost", what, err)
		}
		s.m.cov.twice++
		return false
	case l != nil:
		if err != nil {
			t.Fatalf("%s, lease held: %v", what, err)
		}
		if s.m.le(l.deadline, s.m.now.ms()) {
			s.m.cov.settleExpired++ // expired but not reclaimed: it still holds
		}
		if op != "Extend" {
			h.state = handleSettled
		}
		return true
	case op == "Extend":
		if !lost {
			t.Fatalf("%s, lease gone: %v, want ErrLeaseLost", what, err)
		}
		h.state = handleLost
	case after.Before(h.heldLo):
		// Gone, but surely not expired by this process's clock: an earlier
		// send of this settlement would have done it.
		if err != nil {
			t.Fatalf("%s, lease gone within its visibility timeout by the local clock: %v, want nil", what, err)
		}
		h.state = handleSettled
		s.m.cov.lostUnseen++
	case !before.Before(h.heldHi):
		if !lost {
			t.Fatalf("%s, lease gone and past its visibility timeout: %v, want ErrLeaseLost", what, err)
		}
		h.state = handleLost
		s.m.cov.lostSeen++
	case err == nil:
		h.state = handleSettled
		s.m.cov.lostUnseen++
	case lost:
		h.state = handleLost
		s.m.cov.lostSeen++
	default:
		t.Fatalf("%s, lease gone: %v, want nil or ErrLeaseLost", what, err)
	}
	return false
}

func (s *modelMachine) ack(t *rapid.T) {
	h := s.pick(t)
	var err error
	before, after := s.call(func() { err = h.d.Ack(s.ctx) })
	if s.settled(t, "Ack", h, before, after, err) {
		s.m.ack(s.m.leases[h.serial])
	}
}

func (s *modelMachine) nack(t *rapid.T) {
	h := s.pick(t)
	delay := rapid.SampledFrom(s.b.delays).Draw(t, "delay")
	reason := rapid.SampledFrom([]string{"", "handler failed"}).Draw(t, "reason")
	var opts []blocking.NackOption
	if reason != "" {
		opts = append(opts, blocking.WithReason(errors.New(reason)))
	} else {
		reason = "nacked"
	}
	var err error
	before, after := s.call(func() { err = h.d.Nack(s.ctx, delay, opts...) })
	if s.settled(t, "Nack", h, before, after, err) {
		s.m.nack(s.m.leases[h.serial], delay, reason, s.m.cfgMax)
	}
}

func (s *modelMachine) extend(t *rapid.T) {
	h := s.pick(t)
	by := rapid.SampledFrom(s.b.extends).Draw(t, "by")
	var err error
	before, after := s.call(func() { err = h.d.Extend(s.ctx, by) })
	if s.settled(t, "Extend", h, before, after, err) {
		l := s.m.leases[h.serial]
		l.deadline = s.m.now.ms().plus(by.Milliseconds())
		h.heldLo, h.heldHi = before.Add(by), after.Add(by)
		s.m.cov.extends++
	}
}

// drawTime draws a later server time: a whole number of half seconds
// ahead, or exactly the next time something falls due or expires.
func (s *modelMachine) drawTime(t *rapid.T) int64 {
	if next, ok := s.m.nextEvent(); ok && rapid.IntRange(0, 2).Draw(t, "toNextEvent") == 0 {
		return next
	}
	return s.m.now.lo + 500_000*int64(rapid.IntRange(1, 30).Draw(t, "halfSeconds"))
}

// advance moves the frozen clock and runs one transfer step, as one action
// so that the background workers never see a time the model has not
// processed.
func (s *modelMachine) advance(t *rapid.T) {
	to := s.drawTime(t)
	s.m.now = exactly(to)
	s.mr.SetTime(time.UnixMicro(to))
	if err := mover.RunOnce(s.ctx, s.target); err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	s.m.runOnce()
	s.m.cov.advances++
}

// lag moves the frozen clock without a transfer step: due items stay
// pending and expired leases stay held until the next advance. Drawn only
// when consumers are fenced, as their workers would notice the new time.
func (s *modelMachine) lag(t *rapid.T) {
	to := s.drawTime(t)
	s.m.now = exactly(to)
	s.mr.SetTime(time.UnixMicro(to))
	s.m.cov.lags++
}

// deadLetter receives the oldest dead letter from the dead-letter queue and
// nacks it with no delay. The dead-letter queue counts its own deliveries
// and, with nothing pending of its own, puts the item back at its tail at
// once with the delivery counted: the one way a dead letter gets an
// attempt counter that Redrive has to reset. Drawn when that retry is not
// the dead-letter queue's last attempt (which would bury the item in the
// dead letters' dead letters).
func (s *modelMachine) deadLetter(t *rapid.T) {
	m := s.m
	if len(m.dead) == 0 || m.dead[0].kind != modelInt || m.dead[0].attempt+1 >= m.cfgMax {
		t.Skip("the oldest dead letter cannot be received and retried")
	}
	dlq := s.cq.DeadLetters()
	if s.setsMax {
		m.deadMeta = m.cfgMax // recorded by its first consuming call
	}
	var d *blocking.Delivery[int]
	var err error
	s.call(func() {
		ctx, cancel := context.WithTimeout(s.ctx, modelReceiveWait)
		defer cancel()
		d, err = dlq.Receive(ctx)
	})
	it := m.dead[0]
	if err != nil {
		t.Fatalf("dead letters' Receive with %s next in the model: %v", it.format(s.baseMS), err)
	}
	s.checkDelivery(t, "dead letters' Receive", d, it)
	s.call(func() { err = d.Nack(s.ctx, 0) })
	if err != nil {
		t.Fatalf("dead letters' Nack: %v", err)
	}
	m.dead = m.dead[1:]
	it.attempt++
	it.errText = "nacked"
	it.due = m.now.ms()
	m.dead = append(m.dead, it)
	m.cov.deadNacks++
}

func (s *modelMachine) redrive(t *rapid.T) {
	choices := []int{0, 1, 2}
	if s.b.real && s.m.maxAttempts(s.m.cfgMax) > 1 {
		// An undecodable item must not come back: its retry would fall due
		// during the test.
		first := slices.IndexFunc(s.m.dead, func(it *modelItem) bool { return it.kind == modelStr })
		switch first {
		case -1:
		case 0:
			t.Skip("the oldest dead letter cannot be decoded")
		case 1:
			choices = []int{1}
		default:
			choices = []int{1, 2}
		}
	}
	limit := rapid.SampledFrom(choices).Draw(t, "max")
	var n int
	var err error
	s.call(func() { n, err = s.q.Redrive(s.ctx, limit) })
	if err != nil {
		t.Fatalf("Redrive(%d): %v", limit, err)
	}
	if want := s.m.redrive(limit); n != want {
		t.Fatalf("Redrive(%d) = %d, model moves %d", limit, n, want)
	}
}

// modelStored is the queue's keys as read in one round trip.
type modelStored struct {
	ready, dead, claimed  []string // RPOP order: next (oldest) first
	delayed, retry, lease []redis.Z
	items, inflight       map[string]string
	meta, deadMeta, seen  map[string]string
	seq                   string // "" when absent
	keys                  []string
}

func (s *modelMachine) read(t *rapid.T) *modelStored {
	ctx, k := s.ctx, s.k
	var (
		ready, dead, claimed, ks    *redis.StringSliceCmd
		delayedZ, retryZ, leasesZ   *redis.ZSliceCmd
		items, inflight, meta, seen *redis.MapStringStringCmd
		deadMeta                    *redis.MapStringStringCmd
		seq                         *redis.StringCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ready = p.LRange(ctx, k.Ready, 0, -1)
		dead = p.LRange(ctx, k.DeadReady, 0, -1)
		claimed = p.LRange(ctx, k.Claimed, 0, -1)
		delayedZ = p.ZRangeWithScores(ctx, k.Delayed, 0, -1)
		retryZ = p.ZRangeWithScores(ctx, k.Retry, 0, -1)
		leasesZ = p.ZRangeWithScores(ctx, k.Leases, 0, -1)
		items = p.HGetAll(ctx, k.Items)
		inflight = p.HGetAll(ctx, k.Inflight)
		meta = p.HGetAll(ctx, k.Meta)
		deadMeta = p.HGetAll(ctx, k.Dead().Meta)
		seen = p.HGetAll(ctx, k.Seen)
		seq = p.Get(ctx, k.Seq)
		ks = p.Keys(ctx, s.pattern())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("reading the queue's keys: %v", err)
	}
	st := &modelStored{
		ready: ready.Val(), dead: dead.Val(), claimed: claimed.Val(),
		delayed: delayedZ.Val(), retry: retryZ.Val(), lease: leasesZ.Val(),
		items: items.Val(), inflight: inflight.Val(), meta: meta.Val(), deadMeta: deadMeta.Val(), seen: seen.Val(),
		seq: seq.Val(), keys: ks.Val(),
	}
	slices.Reverse(st.ready)
	slices.Reverse(st.dead)
	slices.Reverse(st.claimed)
	return st
}

// modelDecode reads a stored item back.
func modelDecode(raw string) (*modelItem, error) {
	b := []byte(raw)
	if !envelope.IsEnvelope(b) {
		v, ok := strings.CutPrefix(raw, "garbage-")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, fmt.Errorf("bytes that are no envelope and no garbage of the test: %q", raw)
		}
		return &modelItem{val: n, kind: modelGarbage}, nil
	}
	e, err := envelope.Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("envelope %q: %w", raw, err)
	}
	it := &modelItem{
		id: e.ID, attempt: e.Attempt,
		enq: exactly(e.EnqueuedAt.UnixMilli()), due: exactly(e.DueAt.UnixMilli()),
	}
	dropStory(e.Headers)
	for k, v := range e.Headers {
		if k == blocking.HeaderError {
			it.errText = v
			continue
		}
		if it.headers == nil {
			it.headers = map[string]string{}
		}
		it.headers[k] = v
	}
	c := codec.Msgpack()
	var n int
	if err := c.Unmarshal(e.Payload, &n); err == nil {
		it.val = n
		return it, nil
	}
	var str string
	if err := c.Unmarshal(e.Payload, &str); err != nil {
		return nil, fmt.Errorf("item %s: payload is neither an int nor a string: %w", e.ID, err)
	}
	v, ok := strings.CutPrefix(str, "s")
	n, err = strconv.Atoi(v)
	if !ok || err != nil {
		return nil, fmt.Errorf("item %s: string payload %q is none of the test's", e.ID, str)
	}
	it.val, it.kind = n, modelStr
	return it, nil
}

// sameItem compares a stored item with the model's: "" when they match.
func (s *modelMachine) sameItem(got, want *modelItem) string {
	slack := s.b.slackUS / 1000
	switch {
	case got.fields() != want.fields():
		return "fields differ"
	case want.kind == modelGarbage:
		return ""
	case !want.enq.holds(got.enq.lo, slack):
		return "enqueued time differs"
	case !want.due.holds(got.due.lo, slack):
		return "due time differs"
	}
	return ""
}

// narrow makes the model's times the stored ones, once checked.
func narrow(want, got *modelItem) {
	want.enq, want.due = got.enq, got.due
}

var (
	modelTokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{11}0$`)
	modelNonceRE = regexp.MustCompile(`^[A-Za-z0-9_-]{11}0?$`)
	modelLaneRE  = regexp.MustCompile(`^[0-9a-z]+\|[012]+$`)
)

func (s *modelMachine) check(t *rapid.T) {
	m := s.m
	m.cov.steps++
	if !s.fenced && !s.b.real && m.lagging() {
		t.Fatalf("model bug: a transfer step is overdue while a worker runs")
	}
	for _, c := range []struct {
		what string
		size func(context.Context) (int64, error)
		want int
	}{
		{"Queue.Size", s.q.Size, len(m.ready)},
		{"DeadLetters().Size", s.q.DeadLetters().Size, len(m.dead)},
		{"delayed Queue.Size", s.dq.Size, len(m.pending)},
	} {
		if n, err := c.size(s.ctx); err != nil || n != int64(c.want) {
			t.Fatalf("%s = %d, %v; model has %d", c.what, n, err, c.want)
		}
	}

	st := s.read(t)
	s.checkKeys(t, st)
	decode := func(where, raw string) *modelItem {
		it, err := modelDecode(raw)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		return it
	}
	var values []int // every stored item's value
	decodeList := func(where string, raws []string) []*modelItem {
		var out []*modelItem
		for _, raw := range raws {
			it := decode(where, raw)
			values = append(values, it.val)
			out = append(out, it)
		}
		return out
	}

	if len(st.claimed) > 0 {
		t.Fatalf("claimed list holds %d items between steps: %q", len(st.claimed), st.claimed)
	}
	// A worker's reclaim may see an item in the claimed list while a
	// Receive waits for it, and forgets it at its next run.
	if s.fenced && len(st.seen) > 0 {
		t.Fatalf("claimed:seen holds %d entries though no reclaim ran", len(st.seen))
	}

	s.compareList(t, "ready list (next first)", decodeList("ready", st.ready), m.ready)
	s.compareList(t, "dead letters (oldest first)", decodeList("dead letters", st.dead), m.dead)
	values = append(values, s.comparePending(t, st, decode)...)
	values = append(values, s.compareRetry(t, st, decode)...)
	values = append(values, s.compareLeases(t, st, decode)...)

	// Nothing lost, nothing duplicated.
	count := map[int]int{}
	for _, v := range values {
		count[v]++
	}
	for v := range m.alive {
		if count[v] != 1 {
			t.Fatalf("v%d (offered, not acked, taken or removed) is stored %d times", v, count[v])
		}
	}
	for v, n := range count {
		if !m.alive[v] {
			t.Fatalf("v%d is stored %d times after it was acked, taken or removed", v, n)
		}
	}

	// The codec's name is announced by the transfer's first run, at a time
	// the model does not follow; it is checked by the inspect tests.
	delete(st.meta, "codec")
	// Every process records the queue's number of partitions at its first
	// call: 1 here (the partition tests check when).
	if p, ok := st.meta["partitions"]; ok && p != "1" {
		t.Fatalf("meta hash records %q partitions, want 1", p)
	}
	delete(st.meta, "partitions")
	// The totals of settled items are counted by the scripts (checked by
	// inspect's TestProcessedFailed); here only their form.
	for _, f := range []string{"processed", "failed"} {
		for _, meta := range []map[string]string{st.meta, st.deadMeta} {
			if v, ok := meta[f]; ok {
				if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
					t.Fatalf("meta hash field %s = %q", f, v)
				}
				delete(meta, f)
			}
		}
	}
	wantMeta := map[string]string{}
	if m.meta > 0 {
		wantMeta["max_attempts"] = strconv.Itoa(m.meta)
	}
	if !maps.Equal(st.meta, wantMeta) {
		t.Fatalf("meta hash = %v, model %v", st.meta, wantMeta)
	}
	wantMeta = map[string]string{}
	if m.deadMeta > 0 {
		wantMeta["max_attempts"] = strconv.Itoa(m.deadMeta)
	}
	if !maps.Equal(st.deadMeta, wantMeta) {
		t.Fatalf("dead letters' meta hash = %v, model %v", st.deadMeta, wantMeta)
	}
	wantSeq := ""
	if m.seq > 0 {
		wantSeq = strconv.FormatInt(m.seq, 10)
	}
	if st.seq != wantSeq {
		t.Fatalf("offer counter = %q, model %q", st.seq, wantSeq)
	}
	for _, h := range s.handles {
		if m.leases[h.serial] != nil && h.state != handleLeased {
			t.Fatalf("model bug: delivery %d is settled but its lease is held", h.serial)
		}
	}
}

// checkKeys checks that the queue has no key the model does not know of,
// and that lane keys look like offer.lua's records and expire.
func (s *modelMachine) checkKeys(t *rapid.T, st *modelStored) {
	k := s.k
	known := map[string]bool{
		k.Ready: true, k.Delayed: true, k.Items: true, k.Seq: true, k.Retry: true,
		k.Leases: true, k.Inflight: true, k.Claimed: true, k.Seen: true, k.Meta: true,
		k.DeadReady: true, k.Dead().Meta: true, k.History: true, k.Dead().History: true,
	}
	lanePrefix := strings.TrimSuffix(k.Lane("x"), "x")
	var lanes []string
	for _, key := range st.keys {
		switch {
		case known[key]:
		case strings.HasPrefix(key, lanePrefix):
			lanes = append(lanes, key)
		default:
			t.Fatalf("unexpected key %q", key)
		}
	}
	if len(lanes) == 0 {
		return
	}
	ttls := make([]*redis.DurationCmd, len(lanes))
	vals := make([]*redis.StringCmd, len(lanes))
	_, err := s.rdb.Pipelined(s.ctx, func(p redis.Pipeliner) error {
		for i, key := range lanes {
			ttls[i] = p.PTTL(s.ctx, key)
			vals[i] = p.Get(s.ctx, key)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading lane keys: %v", err)
	}
	for i, key := range lanes {
		if ttl := ttls[i].Val(); ttl <= 0 || ttl > store.LaneTTL {
			t.Fatalf("lane key %q expires in %v, want (0, %v]", key, ttl, store.LaneTTL)
		}
		if v := vals[i].Val(); !modelLaneRE.MatchString(v) {
			t.Fatalf("lane key %q holds %q, want nonce|statuses", key, v)
		}
	}
}

func (s *modelMachine) fmtItems(items []*modelItem) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "    %s\n", it.format(s.baseMS))
	}
	return b.String()
}

func (s *modelMachine) compareList(t *rapid.T, what string, got, want []*modelItem) {
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = s.sameItem(got[i], want[i]) == ""
	}
	if !ok {
		t.Fatalf("%s at %s ms:\n  stored:\n%s  model:\n%s", what, s.m.now.ms().format(s.baseMS), s.fmtItems(got), s.fmtItems(want))
	}
	for i := range got {
		narrow(want[i], got[i])
	}
}

// comparePending compares the delayed set and the items hash with the
// model, and returns the stored values.
func (s *modelMachine) comparePending(t *rapid.T, st *modelStored, decode func(string, string) *modelItem) []int {
	m := s.m
	if len(st.items) != len(st.delayed) {
		t.Fatalf("delayed set holds %d members, items hash %d fields", len(st.delayed), len(st.items))
	}
	type entry struct {
		it    *modelItem
		seq   int64
		field string
		score int64
	}
	var got []entry
	byVal := map[int]entry{}
	for _, z := range st.delayed {
		member := z.Member.(string)
		if len(member) < lua.SeqLen {
			t.Fatalf("delayed member %q is shorter than its seq prefix", member)
		}
		seqBytes, field := member[:lua.SeqLen], member[lua.SeqLen:]
		var seq int64
		for i := range lua.SeqLen {
			seq = seq<<8 | int64(seqBytes[i])
		}
		val, ok := st.items[field]
		if !ok || !strings.HasPrefix(val, seqBytes) {
			t.Fatalf("delayed member %q: items-hash value %q does not start with its seq", member, val[:min(len(val), lua.SeqLen)])
		}
		it := decode("delayed "+field, val[lua.SeqLen:])
		if it.id != field {
			t.Fatalf("delayed member %q holds item %s", member, it.id)
		}
		e := entry{it, seq, field, int64(z.Score)}
		got = append(got, e)
		byVal[it.val] = e
	}
	slack := s.b.slackUS
	for _, p := range m.pending {
		if e, ok := byVal[p.it.val]; ok && p.score.holds(e.score, slack) {
			p.score = exactly(e.score)
		}
	}
	m.sortSets()
	ok := len(got) == len(m.pending)
	for i := 0; ok && i < len(got); i++ {
		p := m.pending[i]
		ok = got[i].seq == p.seq && got[i].field == p.it.id && p.score.holds(got[i].score, slack) &&
			s.sameItem(got[i].it, p.it) == ""
	}
	if !ok {
		var gb, wb strings.Builder
		base := s.baseMS * 1000
		for _, e := range got {
			fmt.Fprintf(&gb, "    seq=%d score=%+dµs %s\n", e.seq, e.score-base, e.it.format(s.baseMS))
		}
		for _, p := range m.pending {
			fmt.Fprintf(&wb, "    seq=%d score=%sµs %s\n", p.seq, p.score.format(base), p.it.format(s.baseMS))
		}
		t.Fatalf("delayed set at %s ms:\n  stored:\n%s  model:\n%s", m.now.ms().format(s.baseMS), gb.String(), wb.String())
	}
	var values []int
	for i, e := range got {
		narrow(m.pending[i].it, e.it)
		values = append(values, e.it.val)
	}
	return values
}

// compareRetry compares the retry set with the model, learning the nonces
// and jittered due times the model could not know, and returns the stored
// values.
func (s *modelMachine) compareRetry(t *rapid.T, st *modelStored, decode func(string, string) *modelItem) []int {
	m := s.m
	type entry struct {
		it    *modelItem
		nonce string
		score int64
	}
	var got []entry
	byVal := map[int]entry{}
	for _, z := range st.retry {
		member := z.Member.(string)
		if len(member) == 0 || len(member) < 1+int(member[0]) {
			t.Fatalf("retry member %q is shorter than its nonce", member)
		}
		n := int(member[0])
		nonce := member[1 : 1+n]
		if !modelNonceRE.MatchString(nonce) {
			t.Fatalf("retry member nonce %q is neither a lease token nor a random token", nonce)
		}
		it := decode("retry", member[1+n:])
		e := entry{it, nonce, int64(z.Score)}
		got = append(got, e)
		byVal[it.val] = e
	}
	slack := s.b.slackUS
	nonces := map[string]bool{}
	for _, r := range m.retry {
		nonces[r.nonce] = true
	}
	for _, r := range m.retry {
		e, ok := byVal[r.it.val]
		if !ok {
			continue
		}
		if r.nonce == "" && !nonces[e.nonce] {
			r.nonce = e.nonce
			nonces[e.nonce] = true
		}
		if r.score.holds(e.score, slack) {
			r.score = exactly(e.score)
			r.it.due = exactly(e.score / 1000)
		}
	}
	m.sortSets()
	ok := len(got) == len(m.retry)
	for i := 0; ok && i < len(got); i++ {
		r := m.retry[i]
		ok = got[i].nonce == r.nonce && r.score.holds(got[i].score, slack) && s.sameItem(got[i].it, r.it) == ""
	}
	if !ok {
		var gb, wb strings.Builder
		base := s.baseMS * 1000
		for _, e := range got {
			fmt.Fprintf(&gb, "    nonce=%s score=%+dµs %s\n", e.nonce, e.score-base, e.it.format(s.baseMS))
		}
		for _, r := range m.retry {
			fmt.Fprintf(&wb, "    nonce=%s score=%sµs %s\n", r.nonce, r.score.format(base), r.it.format(s.baseMS))
		}
		t.Fatalf("retry set at %s ms:\n  stored:\n%s  model:\n%s", m.now.ms().format(s.baseMS), gb.String(), wb.String())
	}
	var values []int
	for i, e := range got {
		narrow(m.retry[i].it, e.it)
		values = append(values, e.it.val)
	}
	return values
}

// compareLeases compares the leases set and the inflight hash with the
// model, learning the tokens of new leases, and returns the stored values.
func (s *modelMachine) compareLeases(t *rapid.T, st *modelStored, decode func(string, string) *modelItem) []int {
	m := s.m
	if len(st.inflight) != len(st.lease) {
		t.Fatalf("leases set holds %d tokens, inflight hash %d", len(st.lease), len(st.inflight))
	}
	type entry struct {
		it       *modelItem
		token    string
		deadline int64
	}
	var got []entry
	byVal := map[int]entry{}
	for _, z := range st.lease {
		token := z.Member.(string)
		raw, ok := st.inflight[token]
		if !ok {
			t.Fatalf("lease %s has no inflight envelope", token)
		}
		if !modelTokenRE.MatchString(token) {
			t.Fatalf("lease token %q is not a random prefix and index 0", token)
		}
		it := decode("inflight "+token, raw)
		e := entry{it, token, int64(z.Score)}
		got = append(got, e)
		byVal[it.val] = e
	}
	known := map[string]bool{}
	for _, l := range m.leases {
		known[l.token] = true
	}
	slack := s.b.slackUS / 1000
	var want []*modelLease
	for _, l := range m.leases {
		if e, ok := byVal[l.it.val]; ok {
			if l.token == "" && !known[e.token] {
				l.token = e.token
				known[e.token] = true
			}
			if l.deadline.holds(e.deadline, slack) {
				l.deadline = exactly(e.deadline)
			}
		}
		want = append(want, l)
	}
	slices.SortFunc(got, func(a, b entry) int { return strings.Compare(a.token, b.token) })
	slices.SortFunc(want, func(a, b *modelLease) int {
		return cmp.Or(strings.Compare(a.token, b.token), cmp.Compare(a.serial, b.serial))
	})
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		l := want[i]
		ok = got[i].token == l.token && l.deadline.holds(got[i].deadline, slack) && s.sameItem(got[i].it, l.it) == ""
	}
	if !ok {
		var gb, wb strings.Builder
		for _, e := range got {
			fmt.Fprintf(&gb, "    token=%s deadline=%+d %s\n", e.token, e.deadline-s.baseMS, e.it.format(s.baseMS))
		}
		for _, l := range want {
			fmt.Fprintf(&wb, "    token=%s deadline=%s delivery %d: %s\n", l.token, l.deadline.format(s.baseMS), l.serial, l.it.format(s.baseMS))
		}
		t.Fatalf("leases at %s ms:\n  stored:\n%s  model:\n%s", m.now.ms().format(s.baseMS), gb.String(), wb.String())
	}
	var values []int
	for i, e := range got {
		narrow(want[i].it, e.it)
		values = append(values, e.it.val)
	}
	return values
}

func runModel(t *testing.T, env *modelEnv) {
	env.outer = t
	env.cov = &modelCoverage{}
	start := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		s := newModelMachine(rt, env)
		defer s.close()
		rt.Repeat(s.actions())
	})
	t.Logf("%v; coverage: %+v", time.Since(start).Round(time.Millisecond), *env.cov)
}

func TestModel(t *testing.T) {
	t.Parallel()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		runModel(t, &modelEnv{b: &modelOnMiniredis})
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		rdb := redistest.Standalone(t)
		frdb := newModelFencedClient(rdb.Options().Addr)
		t.Cleanup(func() { _ = frdb.Close() })
		runModel(t, &modelEnv{b: &modelOnRedis, rdb: rdb, frdb: frdb})
	})
}

// dropStory deletes from h the headers of an item's story (its last
// errors, when it died and after how many deliveries), which the model
// does not follow: inspect's TestDeadLetterStory checks them.
func dropStory(h map[string]string) {
	delete(h, envelope.HeaderErrors)
	delete(h, envelope.HeaderDeadAt)
	delete(h, envelope.HeaderAttempts)
}
