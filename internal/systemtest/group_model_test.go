package systemtest_test

// TestGroupModel is a model-based property test of groups
// (blocking.WithGroup, delayed.WithGroup; see Groups in
// internal/lua/prelude.lua): rapid draws sequences of steps, runs each
// against a queue and against an in-memory model, and checks after every
// step that ran that the queue holds what the model does.
//
// Steps: offers to a few groups and without a group (blocking Offer, and
// delayed Offer with a delay or none), Receive and ReceiveBatch (of what
// may be leased; with nothing to lease, a probe that must time out, or a
// Receive that waits while an item is offered), Take (Poll(0), TakeBatch,
// or a Take that waits while an item is offered), Ack, Nack with no delay,
// settling again a delivery that was settled or whose lease was taken
// back, PauseGroup, ResumeGroup, PurgeGroup, and lease expiry with the
// reclaim (and the transfer of due delayed items). Each check first
// records the queue's group concurrency limit n, 1 or 2, as a Consume
// with WithGroupConcurrency(n) records it (the store's SetGroupLimits).
//
// The model knows, for each group, its ready items in the order they are
// delivered (offers and due items at the back, expired leases back at the
// front), its leases and whether it is paused; and the ready items without
// a group (until the queue has had a grouped item; from then on, those go
// to the group "" of their own). It does not follow the order of the
// groups' turns in the ready list: a delivery may come from any group
// that may deliver, and must be that group's first item. So:
//
//   - A Receive leases the first item of a group that is not paused and
//     holds fewer than n leases, or the oldest ready item without a group;
//     a ReceiveBatch of k leases min(k, all that may be leased). So no group
//     ever holds more than n leases (counted from the deliveries held, and
//     as Groups reports them), and a paused group delivers nothing. Take
//     takes the first item of any group that is not paused: it holds
//     nothing in flight, so a group's limit does not slow it
//     (WithGroupConcurrency, README "Groups"). A delivery's Attempt and
//     Group are the model's.
//   - With nothing that may be delivered, Receive waits (a probe times out)
//     and Poll(0) returns nothing; an item offered meanwhile is the one a
//     waiting Receive or Take gets.
//   - A group that had only immediate offers and was never nacked nor had
//     a lease expire delivers its items in offer order; nothing acked or
//     taken is delivered again.
//   - After every step, the stored state is the model's: the ready list
//     (items, and at most one turn per group: the set gturn), each group's
//     set in order, the delayed set in order, the leases with their groups
//     (gflight, gtok), gsize, gpaused; every value offered and neither
//     acked, taken nor purged is stored exactly once; Stats (Ready,
//     Delayed, Retry, Inflight) and Groups agree. Every group that may
//     lease has a turn out (else consumers would wait for ever).
//   - At the end everything is drained (groups resumed, leases acked,
//     delayed items made due, then one TakeBatch): every value offered and
//     not purged was delivered, Size is 0, Groups lists nothing, and no key
//     of a group is left (gturn, gsize, gflight, gtok, gwait, gpaused, the
//     groups' sets) nor any turn in the ready list.
//
// It runs as two subtests, as TestModel does. "miniredis": the server clock
// is frozen (SetTime); the "advance" step moves it (by half seconds, or to
// the next due time or lease deadline) and runs mover.RunOnce in the same
// step, so leases expire and delayed items become ready at points the
// model knows. "redis": a real redis-server, whose clock cannot be
// stopped: delays are 0 or an hour or more and leases last an hour; the
// "expire" step moves one lease's deadline into the past (its score in the
// leases set) and the "due" step moves every delayed item's due time into
// the past, keeping their order, each followed by mover.RunOnce. On both,
// the consumers use a client that refuses the transfer and reclaim scripts
// (newModelFencedClient), so only RunOnce moves anything.
//
// Each check is a fresh queue and up to 20 steps on miniredis, 30 on the
// real server (see run); the number of checks is rapid's (-rapid.checks,
// 100 by default).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// gmTurn starts a group's turn in the ready list (TURN in
// internal/lua/prelude.lua); the group's key follows.
const gmTurn = "\x00\x01"

// gmMaxAttempts is high enough that no item of a check is dead-lettered.
const gmMaxAttempts = 1000

// gmKeys are the groups offers draw from; an offer without a group is in
// the group "" once the queue is grouped.
var gmKeys = []string{"a", "b", "c"}

// gmAllKeys are every group a check can have.
var gmAllKeys = []string{"a", "b", "c", ""}

// gmBackend is what one subtest draws from.
type gmBackend struct {
	real         bool
	delays       []time.Duration // delayed offers; zero, listed twice, is drawn more often
	visibilities []time.Duration
	maxProbes    int // probes per check: each costs a blocked wait
	maxSteps     int // steps per check, at most
}

var (
	gmOnMiniredis = gmBackend{
		delays:       []time.Duration{0, 0, 500 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second},
		visibilities: []time.Duration{time.Second, 2 * time.Second},
		maxProbes:    2,
		maxSteps:     20,
	}
	gmOnRedis = gmBackend{
		real:         true,
		delays:       []time.Duration{0, 0, time.Hour, 2 * time.Hour},
		visibilities: []time.Duration{time.Hour},
		maxProbes:    1,
		maxSteps:     30,
	}
)

// gmItem is one offered value.
type gmItem struct {
	val      int
	group    string
	hasGroup bool // offered WithGroup(group)
	attempt  int  // failed deliveries: nacks and expired leases
}

func (it *gmItem) String() string {
	if it.hasGroup {
		return fmt.Sprintf("v%d(%s)", it.val, it.group)
	}
	return fmt.Sprintf("v%d", it.val)
}

// gmPending is an item in the delayed set.
type gmPending struct {
	it  *gmItem
	due int64 // µs: exact on miniredis; on a real server the local clock before the offer plus the delay, which orders like the server's
	seq int   // offer order: ties on due
}

// gmLease is a delivery received and neither settled nor taken back.
type gmLease struct {
	it       *gmItem
	serial   int
	group    string
	counted  bool  // taken from group: holds one of its n slots
	deadline int64 // Unix ms (miniredis)
	token    string
	d        *blocking.Delivery[int]
}

// gmGroup is one group of the model.
type gmGroup struct {
	items  []*gmItem // ready, next first
	flight int       // leases held (counted)
	paused bool
	// For the check of offer order: disturbed once an item of the group
	// was offered with a delay, nacked or had its lease expire.
	disturbed bool
	last      int // the value delivered last
}

// gmStale is a delivery whose lease the model no longer holds.
type gmStale struct {
	d         *blocking.Delivery[int]
	it        *gmItem
	reclaimed bool // taken back by the reclaimer, not settled by the test
}

// gmCoverage counts what the checks went through, for -v output.
type gmCoverage struct {
	checks, steps, offers, grouped, ungrouped, delayed, delayedNow                 int
	receives, batches, batchShort, takes, takeBatches, emptyTakes, acks            int
	nacks, reclaimed, transferred, pauses, resumes, purged, staleSettles           int
	probes, waitReceives, waitTakes, limitHeld, pausedHeld, fromPlain, fromNoGroup int
}

// groupModel mirrors what the scripts do with groups.
type groupModel struct {
	t       *rapid.T
	cov     *gmCoverage
	limit   int
	grouped bool  // the meta hash's 'groups': items without a group go to group ""
	now     int64 // server clock, Unix µs (miniredis)
	plain   []*gmItem
	groups  map[string]*gmGroup
	pending []*gmPending
	leases  map[int]*gmLease
	alive   map[int]*gmItem // stored: offered, and neither acked, taken nor purged
	gone    map[int]string  // acked, taken or purged: how
	offered []int
	nextVal int
	serial  int
	seq     int
}

func (m *groupModel) group(g string) *gmGroup {
	gr := m.groups[g]
	if gr == nil {
		gr = &gmGroup{}
		m.groups[g] = gr
	}
	return gr
}

// push is ready_push for items in one script run (group_route, G.push):
// an item goes to its group; one without a group to the group "" when the
// queue was grouped before the run, else to the ready list. head: back
// first in line, items[0] first (an expired lease); else last in line.
func (m *groupModel) push(items []*gmItem, head bool) {
	grouped := m.grouped
	var plain []*gmItem
	byGroup := map[string][]*gmItem{}
	for _, it := range items {
		g, ok := it.group, it.hasGroup
		if !ok && grouped {
			g, ok = "", true
		}
		if !ok {
			plain = append(plain, it)
			continue
		}
		byGroup[g] = append(byGroup[g], it)
		if it.hasGroup {
			m.grouped = true
		}
	}
	if head {
		m.plain = append(plain, m.plain...)
	} else {
		m.plain = append(m.plain, plain...)
	}
	for g, its := range byGroup {
		gr := m.group(g)
		if head {
			gr.items = append(slices.Clone(its), gr.items...)
		} else {
			gr.items = append(gr.items, its...)
		}
	}
}

// mayLease reports whether group g may lease an item now.
func (m *groupModel) mayLease(g string) bool {
	gr := m.groups[g]
	return gr != nil && !gr.paused && len(gr.items) > 0 && gr.flight < m.limit
}

// capacity is how many items may be delivered now: by Receive (lease) or
// Take.
func (m *groupModel) capacity(lease bool) int {
	n := len(m.plain)
	for _, gr := range m.groups {
		if gr.paused || len(gr.items) == 0 {
			continue
		}
		// A group at its limit waits, for Take as for Receive: the group
		// has no turn until one of its leases settles. Take holds nothing
		// in flight, so below the limit it may take every item.
		switch {
		case gr.flight >= m.limit:
		case lease:
			n += min(len(gr.items), m.limit-gr.flight)
		default:
			n += len(gr.items)
		}
	}
	return n
}

// deliver applies the delivery of value v by a Receive (lease) or a Take,
// and returns the item, the group it came from (ok false: the ready list's
// own), or why v may not come now.
func (m *groupModel) deliver(v int, lease bool) (it *gmItem, g string, ok bool, why string) {
	if how, gone := m.gone[v]; gone {
		return nil, "", false, fmt.Sprintf("v%d was %s before: delivered twice", v, how)
	}
	if i := slices.IndexFunc(m.plain, func(it *gmItem) bool { return it.val == v }); i >= 0 {
		if i > 0 {
			return nil, "", false, fmt.Sprintf("v%d is ready without a group behind %s", v, m.plain[0])
		}
		it = m.plain[0]
		m.plain = m.plain[1:]
		m.cov.fromPlain++
		return it, "", false, ""
	}
	for _, key := range gmAllKeys {
		gr := m.groups[key]
		if gr == nil {
			continue
		}
		i := slices.IndexFunc(gr.items, func(it *gmItem) bool { return it.val == v })
		switch {
		case i < 0:
			continue
		case gr.paused:
			return nil, "", false, fmt.Sprintf("group %q is paused (PauseGroup): it must deliver nothing", key)
		case gr.flight >= m.limit:
			return nil, "", false, fmt.Sprintf("group %q holds %d leases already: limit %d (WithGroupConcurrency)", key, gr.flight, m.limit)
		case i > 0:
			return nil, "", false, fmt.Sprintf("v%d is not the first of group %q: %s comes first", v, key, gr.items[0])
		}
		it = gr.items[0]
		gr.items = gr.items[1:]
		if it.hasGroup && !gr.disturbed {
			if v < gr.last {
				return nil, "", false, fmt.Sprintf("group %q delivered v%d after v%d: out of offer order", key, v, gr.last)
			}
			gr.last = v
		}
		if key == "" {
			m.cov.fromNoGroup++
		}
		return it, key, true, ""
	}
	for _, l := range m.leases {
		if l.it.val == v {
			return nil, "", false, fmt.Sprintf("v%d is leased (delivery %d)", v, l.serial)
		}
	}
	if slices.ContainsFunc(m.pending, func(p *gmPending) bool { return p.it.val == v }) {
		return nil, "", false, fmt.Sprintf("v%d is delayed, not due", v)
	}
	return nil, "", false, fmt.Sprintf("v%d is not stored", v)
}

// limitedWhy names, for a Take that got less than the model wants, the
// groups with ready items that are at their concurrency limit: "" when
// there are none.
func (m *groupModel) limitedWhy() string {
	var limited []string
	for _, g := range gmAllKeys {
		if gr := m.groups[g]; gr != nil && !gr.paused && gr.flight >= m.limit {
			limited = append(limited, fmt.Sprintf("%q", g))
		}
	}
	if len(limited) == 0 {
		return ""
	}
	return fmt.Sprintf(" (groups at their limit of %d leases: %s; they wait for a lease to settle, for Take as for Receive)",
		m.limit, strings.Join(limited, ", "))
}

func (m *groupModel) settle(l *gmLease) {
	delete(m.leases, l.serial)
	if l.counted {
		m.groups[l.group].flight--
	}
}

func (m *groupModel) finish(it *gmItem, how string) {
	delete(m.alive, it.val)
	m.gone[it.val] = how
}

func (m *groupModel) disturb(it *gmItem) {
	if it.hasGroup {
		m.group(it.group).disturbed = true
	}
}

// runOnce is mover.RunOnce at m.now: the due delayed items to the back, in
// due order, in one run; then the expired leases back to the front,
// earliest deadline (then token) first.
func (m *groupModel) runOnce() {
	var due []*gmItem
	for len(m.pending) > 0 && m.pending[0].due <= m.now {
		due = append(due, m.pending[0].it)
		m.pending = m.pending[1:]
	}
	if len(due) > 0 {
		m.push(due, false)
		m.cov.transferred += len(due)
	}
	var expired []*gmLease
	for _, l := range m.leases {
		if l.deadline <= m.now/1000 {
			expired = append(expired, l)
		}
	}
	m.reclaim(expired)
}

// reclaim is reclaim.lua for the leases ls.
func (m *groupModel) reclaim(ls []*gmLease) []*gmLease {
	for _, l := range ls {
		if l.token == "" {
			m.t.Fatalf("model: the token of %s's lease is not known", l.it)
		}
	}
	slices.SortFunc(ls, func(a, b *gmLease) int {
		return cmp.Or(cmp.Compare(a.deadline, b.deadline), strings.Compare(a.token, b.token))
	})
	back := make([]*gmItem, len(ls))
	for i, l := range ls {
		m.settle(l)
		l.it.attempt++
		m.disturb(l.it)
		back[i] = l.it
	}
	if len(back) > 0 {
		m.push(back, true)
		m.cov.reclaimed += len(back)
	}
	return ls
}

// gmEnv is what every check of a subtest shares.
type gmEnv struct {
	b     *gmBackend
	cov   *gmCoverage
	outer *testing.T
	rdb   *redis.Client // real: the shared server
	frdb  *redis.Client // real: the same, fenced
}

// gmMachine runs one check.
type gmMachine struct {
	t      *rapid.T
	b      *gmBackend
	ctx    context.Context
	mr     *miniredis.Miniredis // nil on a real server
	rdb    *redis.Client        // producer, RunOnce and state reads
	frdb   *redis.Client        // consumers': transfer and reclaim refused
	name   string
	k      keys.Set
	target mover.Target
	vis    time.Duration

	q  *blocking.Queue[int] // producer and admin
	cq *blocking.Queue[int] // consumer, on frdb
	dq *delayed.Queue[int]

	m      *groupModel
	stale  []*gmStale
	probes int
}

func newGMMachine(t *rapid.T, env *gmEnv) *gmMachine {
	b := env.b
	s := &gmMachine{t: t, b: b, ctx: context.Background()}
	s.vis = rapid.SampledFrom(b.visibilities).Draw(t, "visibility")
	limit := rapid.IntRange(1, 2).Draw(t, "groupConcurrency")
	if b.real {
		s.name = redistest.QueueName(env.outer)
		s.rdb, s.frdb = env.rdb, env.frdb
	} else {
		s.mr = miniredis.NewMiniRedis()
		if err := s.mr.Start(); err != nil {
			t.Fatalf("miniredis: %v", err)
		}
		s.mr.SetTime(modelT0)
		s.name = "groupmodel"
		s.rdb = redis.NewClient(&redis.Options{Addr: s.mr.Addr()})
		s.frdb = newModelFencedClient(s.mr.Addr())
	}
	s.k = redistest.KeysOf(s.name)
	part := store.New(s.rdb).Partition(s.k)
	s.target = mover.Target{Queue: part, MaxAttempts: gmMaxAttempts}
	opts := []blocking.Option{blocking.WithVisibilityTimeout(s.vis), blocking.WithMaxAttempts(gmMaxAttempts)}
	s.q = blocking.New[int](s.rdb, s.name, opts...)
	s.cq = blocking.New[int](s.frdb, s.name, opts...)
	s.dq = delayed.New(s.q, delayed.WithoutTransfer())
	s.m = &groupModel{
		t: t, cov: env.cov, limit: limit, now: modelT0.UnixMicro(),
		groups: map[string]*gmGroup{}, leases: map[int]*gmLease{},
		alive: map[int]*gmItem{}, gone: map[int]string{},
	}
	// What a Consume with WithGroupConcurrency(limit) records as it starts
	// (receive.lua), for every Receive of every process.
	if err := part.SetGroupLimits(s.ctx, limit, 0); err != nil {
		t.Fatalf("SetGroupLimits(%d): %v", limit, err)
	}
	env.cov.checks++
	return s
}

func (s *gmMachine) close() {
	_ = s.dq.Close()
	_ = s.cq.Close()
	_ = s.q.Close()
	if s.b.real {
		ctx := context.Background()
		if ks, err := s.rdb.Keys(ctx, keys.Prefix+":{"+s.name+"}*").Result(); err == nil && len(ks) > 0 {
			_ = s.rdb.Del(ctx, ks...).Err()
		}
		return
	}
	_ = s.frdb.Close()
	_ = s.rdb.Close()
	s.mr.Close()
}

// gmStep is one step of a check. It is drawn whole, so that the shrinker
// removes or simplifies a step on its own; what its fields mean depends
// on the action, and which lease or delivery it names on the state when
// it runs.
type gmStep struct {
	action string        // see actions
	group  string        // offers: the item's group, "" for none
	key    string        // pause, resume, purge: the group
	delay  time.Duration // offerDelayed
	batch  int           // receive: 1 for Receive, else ReceiveBatch's size
	mode   string        // take: "poll", "batch" (TakeBatch) or "wait"
	pick   int           // ack, nack, expire, settleStale: which one (modulo their number)
	alt    bool          // receive with nothing to lease: wait for an offer, not probe; settleStale: Nack, not Ack; advance: to the next event
	half   int           // advance: half seconds, unless to the next event
}

// GoString renders a step as the failure log shows it.
func (st gmStep) GoString() string {
	var b strings.Builder
	b.WriteString(st.action)
	switch st.action {
	case "offer":
		fmt.Fprintf(&b, "(%q)", st.group)
	case "offerDelayed":
		fmt.Fprintf(&b, "(%q, %v)", st.group, st.delay)
	case "receive":
		fmt.Fprintf(&b, "(%d", st.batch)
		if st.alt {
			fmt.Fprintf(&b, "; if none: wait for an offer to %q)", st.group)
		} else {
			b.WriteString("; if none: probe)")
		}
	case "take":
		switch st.mode {
		case "batch":
			fmt.Fprintf(&b, "(batch of %d)", 2+st.pick%3)
		case "wait":
			fmt.Fprintf(&b, "(if none: wait for an offer to %q)", st.group)
		default:
			b.WriteString("(poll)")
		}
	case "ack", "nack", "expire":
		fmt.Fprintf(&b, "(lease #%d)", st.pick)
	case "settleStale":
		fmt.Fprintf(&b, "(delivery #%d, nack %v)", st.pick, st.alt)
	case "pause", "resume", "purge":
		fmt.Fprintf(&b, "(%q)", st.key)
	case "advance":
		fmt.Fprintf(&b, "(%d half seconds, or to the next event %v)", st.half, st.alt)
	}
	return b.String()
}

// gmWeight is an action and how often it is drawn: one of weight 2 twice
// as often as one of weight 1.
type gmWeight struct {
	name   string
	weight int
}

// actions are the names the steps' actions are drawn from.
func (s *gmMachine) actions() []string {
	weights := []gmWeight{
		{"offer", 4}, {"offerDelayed", 2}, {"receive", 4}, {"take", 2}, {"ack", 3}, {"nack", 1},
		{"settleStale", 1}, {"pause", 1}, {"resume", 1}, {"purge", 1},
	}
	if s.b.real {
		weights = append(weights, gmWeight{"expire", 1}, gmWeight{"due", 1})
	} else {
		weights = append(weights, gmWeight{"advance", 2})
	}
	var names []string
	for _, w := range weights {
		for range w.weight {
			names = append(names, w.name)
		}
	}
	return names
}

// steps is the generator of a check's steps.
func (s *gmMachine) steps() *rapid.Generator[gmStep] {
	names := s.actions()
	return rapid.Custom(func(t *rapid.T) gmStep {
		return gmStep{
			action: rapid.SampledFrom(names).Draw(t, "action"),
			group:  rapid.SampledFrom([]string{"a", "a", "b", "c", ""}).Draw(t, "group"),
			key:    rapid.SampledFrom(gmKeys).Draw(t, "key"),
			delay:  rapid.SampledFrom(s.b.delays).Draw(t, "delay"),
			batch:  rapid.SampledFrom([]int{1, 1, 2, 3, 5}).Draw(t, "batch"),
			mode:   rapid.SampledFrom([]string{"poll", "poll", "batch", "wait"}).Draw(t, "mode"),
			pick:   rapid.IntRange(0, 9).Draw(t, "pick"),
			alt:    rapid.Bool().Draw(t, "alt"),
			half:   rapid.IntRange(1, 6).Draw(t, "half"),
		}
	})
}

// run draws and runs the steps of a check, checking the state after each
// that changed anything. It draws how many (rapid's Repeat would draw
// -rapid.steps, which every test shares): at most maxSteps, fewer on
// miniredis, whose scripts run in this process, so that the test stays
// quick under the race detector.
func (s *gmMachine) run(t *rapid.T) {
	gen := s.steps()
	s.check(t)
	for i := range rapid.IntRange(1, s.b.maxSteps).Draw(t, "steps") {
		st := gen.Draw(t, fmt.Sprintf("step %d", i+1))
		if s.step(t, st) {
			s.check(t)
		}
	}
}

// step runs st, and reports whether it could run (else it changed
// nothing).
func (s *gmMachine) step(t *rapid.T, st gmStep) bool {
	switch st.action {
	case "offer":
		s.offerNow(t, s.newItem(st.group))
		return true
	case "offerDelayed":
		s.offerDelayed(t, st)
		return true
	case "receive":
		return s.receive(t, st)
	case "take":
		s.take(t, st)
		return true
	case "ack":
		return s.ack(t, st)
	case "nack":
		return s.nack(t, st)
	case "settleStale":
		return s.settleStale(t, st)
	case "pause":
		s.pause(t, st.key)
		return true
	case "resume":
		s.resume(t, st.key)
		return true
	case "purge":
		s.purge(t, st.key)
		return true
	case "advance":
		s.advance(t, st)
		return true
	case "expire":
		return s.expire(t, st)
	case "due":
		if len(s.m.pending) == 0 {
			return false
		}
		s.makeDue(t)
		return true
	}
	t.Fatalf("unknown action %q", st.action)
	return false
}

func (s *gmMachine) newItem(g string) *gmItem {
	m := s.m
	m.nextVal++
	it := &gmItem{val: m.nextVal, group: g, hasGroup: g != ""}
	m.offered = append(m.offered, it.val)
	m.cov.offers++
	if it.hasGroup {
		m.cov.grouped++
	} else {
		m.cov.ungrouped++
	}
	return it
}

// offerNow offers it with the blocking queue and makes it ready in the
// model.
func (s *gmMachine) offerNow(t *rapid.T, it *gmItem) {
	var opts []blocking.OfferOption
	if it.hasGroup {
		opts = append(opts, blocking.WithGroup(it.group))
	}
	if _, err := s.q.Offer(s.ctx, it.val, opts...); err != nil {
		t.Fatalf("Offer(%s): %v", it, err)
	}
	t.Logf("offered %s", it)
	s.m.alive[it.val] = it
	s.m.push([]*gmItem{it}, false)
}

func (s *gmMachine) offerDelayed(t *rapid.T, st gmStep) {
	m := s.m
	it := s.newItem(st.group)
	var opts []delayed.OfferOption
	if it.hasGroup {
		opts = append(opts, delayed.WithGroup(it.group))
	}
	before := time.Now()
	if _, err := s.dq.Offer(s.ctx, it.val, st.delay, opts...); err != nil {
		t.Fatalf("delayed Offer(%s, %v): %v", it, st.delay, err)
	}
	t.Logf("offered %s, delayed %v", it, st.delay)
	m.alive[it.val] = it
	if st.delay == 0 {
		// Due now, and nothing pending is due by now: ready at once.
		m.push([]*gmItem{it}, false)
		m.cov.delayedNow++
		return
	}
	due := m.now + st.delay.Microseconds()
	if s.b.real {
		due = before.UnixMicro() + st.delay.Microseconds()
	}
	m.seq++
	m.pending = append(m.pending, &gmPending{it: it, due: due, seq: m.seq})
	slices.SortStableFunc(m.pending, func(a, b *gmPending) int {
		return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.seq, b.seq))
	})
	m.disturb(it)
	m.cov.delayed++
}

// leased records the deliveries ds, in delivery order, as leases.
func (s *gmMachine) leased(t *rapid.T, what string, ds []*blocking.Delivery[int]) {
	m := s.m
	var got []string
	for i, d := range ds {
		it, g, fromGroup, why := m.deliver(d.Value, true)
		if why != "" {
			t.Fatalf("%s: delivery %d of %d, v%d: %s\n%s", what, i+1, len(ds), d.Value, why, s.describe())
		}
		if d.Attempt != it.attempt+1 || d.Group != it.group {
			t.Fatalf("%s: %s delivered with Attempt %d, Group %q; model %d, %q", what, it, d.Attempt, d.Group, it.attempt+1, it.group)
		}
		m.serial++
		l := &gmLease{it: it, serial: m.serial, group: g, counted: fromGroup, deadline: m.now/1000 + s.vis.Milliseconds(), d: d}
		if fromGroup {
			gr := m.groups[g]
			gr.flight++
			if gr.flight > m.limit {
				t.Fatalf("%s: group %q holds %d leases, limit %d", what, g, gr.flight, m.limit)
			}
		}
		m.leases[l.serial] = l
		m.cov.receives++
		got = append(got, it.String())
	}
	t.Logf("%s leased %v", what, got)
}

// notedBlocked counts, for the coverage, the groups with ready items that
// may deliver nothing now: paused, or at their limit.
func (s *gmMachine) notedBlocked() {
	m := s.m
	for _, gr := range m.groups {
		switch {
		case len(gr.items) == 0:
		case gr.paused:
			m.cov.pausedHeld++
		case gr.flight >= m.limit:
			m.cov.limitHeld++
		}
	}
}

func (s *gmMachine) receive(t *rapid.T, st gmStep) bool {
	m := s.m
	capacity := m.capacity(true)
	if capacity == 0 {
		return s.receiveNothing(t, st)
	}
	s.notedBlocked()
	ctx, cancel := context.WithTimeout(s.ctx, modelReceiveWait)
	defer cancel()
	var ds []*blocking.Delivery[int]
	var err error
	what := "Receive"
	if st.batch == 1 {
		var d *blocking.Delivery[int]
		if d, err = s.cq.Receive(ctx); err == nil {
			ds = []*blocking.Delivery[int]{d}
		}
	} else {
		what = fmt.Sprintf("ReceiveBatch(%d)", st.batch)
		ds, err = s.cq.ReceiveBatch(ctx, st.batch)
		m.cov.batches++
		if st.batch > capacity {
			m.cov.batchShort++
		}
	}
	if err != nil {
		t.Fatalf("%s with %d items that may be leased: %v\n%s", what, capacity, err, s.describe())
	}
	if want := min(st.batch, capacity); len(ds) != want {
		t.Fatalf("%s leased %d items %v, want %d: that many may be leased\n%s", what, len(ds), deliveryValues(ds), want, s.describe())
	}
	s.leased(t, what, ds)
	return true
}

func deliveryValues(ds []*blocking.Delivery[int]) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Value
	}
	return out
}

// delivers reports whether an item offered now to group g ("" for none)
// would be delivered at once (lease: by a Receive).
func (s *gmMachine) delivers(g string, lease bool) bool {
	m := s.m
	if g == "" && !m.grouped {
		return true // to the ready list
	}
	gr := m.groups[g]
	return gr == nil || (!gr.paused && gr.flight < m.limit)
}

// receiveNothing runs a Receive while nothing may be leased: a Receive
// that waits while an item is offered to st.group (when its group would
// deliver it), or a probe that must time out.
func (s *gmMachine) receiveNothing(t *rapid.T, st gmStep) bool {
	if !st.alt || !s.delivers(st.group, true) {
		if s.probes >= s.b.maxProbes {
			t.Logf("receive: nothing may be leased, no probe left")
			return false
		}
		s.probe(t)
		return true
	}
	it := s.newItem(st.group)
	var d *blocking.Delivery[int]
	var err error
	s.waiting(t, it, func(ctx context.Context) { d, err = s.cq.Receive(ctx) })
	if err != nil {
		t.Fatalf("Receive waiting for %s: %v\n%s", it, err, s.describe())
	}
	s.leased(t, "Receive waiting for an offer", []*blocking.Delivery[int]{d})
	s.m.cov.waitReceives++
	return true
}

// waiting runs call while it is offered: the caller is most often waiting
// by then (BLMOVE of the group's turn, or the item, to the claimed list),
// else it finds the item ready.
func (s *gmMachine) waiting(t *rapid.T, it *gmItem, call func(context.Context)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(s.ctx, modelReceiveWait)
		defer cancel()
		call(ctx)
	}()
	time.Sleep(5 * time.Millisecond)
	var opts []blocking.OfferOption
	if it.hasGroup {
		opts = append(opts, blocking.WithGroup(it.group))
	}
	_, err := s.q.Offer(s.ctx, it.val, opts...)
	<-done
	if err != nil {
		t.Fatalf("Offer(%s) while a consumer waits: %v", it, err)
	}
	t.Logf("offered %s while a consumer waits", it)
	s.m.alive[it.val] = it
	s.m.push([]*gmItem{it}, false)
}

// probe receives through a queue of its own, closed at once (its Close
// waits for the wait it abandoned, so that nothing is left to claim an
// item after this step), and wants nothing.
func (s *gmMachine) probe(t *rapid.T) {
	s.notedBlocked()
	p := blocking.New[int](s.frdb, s.name, blocking.WithVisibilityTimeout(s.vis), blocking.WithMaxAttempts(gmMaxAttempts))
	ctx, cancel := context.WithTimeout(s.ctx, modelProbeWait)
	d, err := p.Receive(ctx)
	cancel()
	_ = p.Close()
	if err == nil {
		t.Fatalf("Receive with nothing that may be leased: got v%d (attempt %d)\n%s", d.Value, d.Attempt, s.describe())
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive with nothing that may be leased = %v, want DeadlineExceeded", err)
	}
	t.Logf("probe: Receive leased nothing")
	s.probes++
	s.m.cov.probes++
}

// took applies values taken by a Take, in order.
func (s *gmMachine) took(t *rapid.T, what string, vs []int) {
	m := s.m
	var got []string
	for i, v := range vs {
		it, _, _, why := m.deliver(v, false)
		if why != "" {
			t.Fatalf("%s: item %d of %d, v%d: %s\n%s", what, i+1, len(vs), v, why, s.describe())
		}
		m.finish(it, "taken")
		m.cov.takes++
		got = append(got, it.String())
	}
	t.Logf("%s took %v", what, got)
}

func (s *gmMachine) take(t *rapid.T, st gmStep) {
	m := s.m
	capacity := m.capacity(false)
	switch {
	case st.mode == "wait" && capacity == 0 && s.delivers(st.group, false):
		it := s.newItem(st.group)
		var v int
		var err error
		s.waiting(t, it, func(ctx context.Context) { v, err = s.cq.Take(ctx) })
		if err != nil {
			t.Fatalf("Take waiting for %s: %v%s\n%s", it, err, m.limitedWhy(), s.describe())
		}
		s.took(t, "Take waiting for an offer", []int{v})
		m.cov.waitTakes++
		return
	case st.mode == "batch" && capacity > 0:
		k := 2 + st.pick%3
		ctx, cancel := context.WithTimeout(s.ctx, modelReceiveWait)
		defer cancel()
		vs, err := s.cq.TakeBatch(ctx, k)
		if err != nil {
			t.Fatalf("TakeBatch(%d) with %d items that may be taken: %v%s\n%s", k, capacity, err, m.limitedWhy(), s.describe())
		}
		if want := min(k, capacity); len(vs) != want {
			t.Fatalf("TakeBatch(%d) took %v, want %d items: that many may be taken%s\n%s", k, vs, want, m.limitedWhy(), s.describe())
		}
		s.took(t, fmt.Sprintf("TakeBatch(%d)", k), vs)
		m.cov.takeBatches++
		return
	}
	s.notedBlocked()
	v, ok, err := s.cq.Poll(s.ctx, 0)
	switch {
	case err != nil:
		t.Fatalf("Poll(0): %v", err)
	case !ok && capacity > 0:
		t.Fatalf("Poll(0) took nothing, but %d items may be taken%s\n%s", capacity, m.limitedWhy(), s.describe())
	case !ok:
		t.Logf("Poll(0) took nothing")
		m.cov.emptyTakes++
	default:
		s.took(t, "Poll(0)", []int{v})
	}
}

// pick returns the lease st names: nil when the model holds none.
func (s *gmMachine) pick(st gmStep) *gmLease {
	ls := slices.SortedFunc(maps.Values(s.m.leases), func(a, b *gmLease) int { return cmp.Compare(a.serial, b.serial) })
	if len(ls) == 0 {
		return nil
	}
	return ls[st.pick%len(ls)]
}

func (s *gmMachine) ack(t *rapid.T, st gmStep) bool {
	l := s.pick(st)
	if l == nil {
		t.Logf("ack: no lease held")
		return false
	}
	if err := l.d.Ack(s.ctx); err != nil {
		t.Fatalf("Ack of %s (delivery %d), lease held: %v", l.it, l.serial, err)
	}
	t.Logf("acked %s", l.it)
	s.m.settle(l)
	s.m.finish(l.it, "acked")
	s.stale = append(s.stale, &gmStale{d: l.d, it: l.it})
	s.m.cov.acks++
	return true
}

func (s *gmMachine) nack(t *rapid.T, st gmStep) bool {
	l := s.pick(st)
	if l == nil {
		t.Logf("nack: no lease held")
		return false
	}
	if err := l.d.Nack(s.ctx, 0); err != nil {
		t.Fatalf("Nack of %s (delivery %d), lease held: %v", l.it, l.serial, err)
	}
	t.Logf("nacked %s", l.it)
	s.m.settle(l)
	l.it.attempt++
	s.m.disturb(l.it)
	// Due now, and nothing pending is due by now: ready at once.
	s.m.push([]*gmItem{l.it}, false)
	s.stale = append(s.stale, &gmStale{d: l.d, it: l.it})
	s.m.cov.nacks++
	return true
}

// settleStale acks or nacks a delivery whose lease the model no longer
// holds: it changes nothing (a group's slot is not freed twice).
func (s *gmMachine) settleStale(t *rapid.T, st gmStep) bool {
	if len(s.stale) == 0 {
		t.Logf("settleStale: no stale delivery")
		return false
	}
	sd := s.stale[st.pick%len(s.stale)]
	op := "Ack"
	var err error
	if st.alt {
		op = "Nack"
		err = sd.d.Nack(s.ctx, 0)
	} else {
		err = sd.d.Ack(s.ctx)
	}
	// A lease taken back while the Delivery holds it by its own clock may
	// also answer nil, as for a resend of a settlement that took effect.
	if !errors.Is(err, blocking.ErrLeaseLost) && (err != nil || !sd.reclaimed) {
		t.Fatalf("%s of %s again (reclaimed: %v): %v, want ErrLeaseLost", op, sd.it, sd.reclaimed, err)
	}
	t.Logf("%s of %s again: %v", op, sd.it, err)
	sd.reclaimed = false // settled by the Delivery's own account now
	s.m.cov.staleSettles++
	return true
}

// reclaimed moves the deliveries of ls to the stale ones.
func (s *gmMachine) reclaimed(t *rapid.T, ls []*gmLease) {
	var gone []string
	for _, l := range ls {
		s.stale = append(s.stale, &gmStale{d: l.d, it: l.it, reclaimed: true})
		gone = append(gone, l.it.String())
	}
	if len(gone) > 0 {
		t.Logf("leases expired: %v", gone)
	}
}

func (s *gmMachine) runOnce(t *rapid.T) {
	if err := mover.RunOnce(s.ctx, s.target); err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
}

// advance moves the frozen clock (half seconds, or to the next due time
// or lease deadline) and runs the transfer and the reclaim, in one step.
func (s *gmMachine) advance(t *rapid.T, st gmStep) {
	m := s.m
	next, ok := int64(0), false
	for _, p := range m.pending {
		if !ok || p.due < next {
			next, ok = p.due, true
		}
	}
	for _, l := range m.leases {
		if d := l.deadline * 1000; !ok || d < next {
			next, ok = d, true
		}
	}
	to := m.now + 500_000*int64(st.half)
	if ok && st.alt {
		to = max(next, m.now)
	}
	t.Logf("clock %+dms", (to-m.now)/1000)
	m.now = to
	s.mr.SetTime(time.UnixMicro(to))
	s.runOnce(t)
	var expired []*gmLease
	for _, l := range m.leases {
		if l.deadline <= m.now/1000 {
			expired = append(expired, l)
		}
	}
	m.runOnce()
	s.reclaimed(t, expired)
}

// expire (real server) moves the deadline of the lease st names into the
// past and runs the reclaim.
func (s *gmMachine) expire(t *rapid.T, st gmStep) bool {
	l := s.pick(st)
	if l == nil {
		t.Logf("expire: no lease held")
		return false
	}
	if err := s.rdb.ZAddXX(s.ctx, s.k.Leases, redis.Z{Score: 1, Member: l.token}).Err(); err != nil {
		t.Fatalf("moving the deadline of %s: %v", l.it, err)
	}
	s.runOnce(t)
	l.deadline = 1
	s.reclaimed(t, s.m.reclaim([]*gmLease{l}))
	return true
}

// makeDue makes every delayed item due, in their order, and runs the
// transfer: on miniredis by moving the clock to the last due time; on a
// real server by moving their due times into the past.
func (s *gmMachine) makeDue(t *rapid.T) {
	m := s.m
	t.Logf("every delayed item due")
	if s.b.real {
		members, err := s.rdb.ZRange(s.ctx, s.k.Delayed, 0, -1).Result()
		if err != nil {
			t.Fatalf("reading the delayed set: %v", err)
		}
		zs := make([]redis.Z, len(members))
		for i, member := range members {
			zs[i] = redis.Z{Score: float64(i + 1), Member: member}
		}
		if len(zs) > 0 {
			if err := s.rdb.ZAddXX(s.ctx, s.k.Delayed, zs...).Err(); err != nil {
				t.Fatalf("making the delayed items due: %v", err)
			}
		}
		s.runOnce(t)
		for _, p := range m.pending {
			p.due = 0
		}
		m.runOnce()
		return
	}
	to := m.now
	for _, p := range m.pending {
		to = max(to, p.due)
	}
	m.now = to
	s.mr.SetTime(time.UnixMicro(to))
	s.runOnce(t)
	m.runOnce()
}

func (s *gmMachine) pause(t *rapid.T, g string) {
	if err := s.q.PauseGroup(s.ctx, g); err != nil {
		t.Fatalf("PauseGroup(%q): %v", g, err)
	}
	t.Logf("paused %q", g)
	s.m.group(g).paused = true
	s.m.cov.pauses++
}

func (s *gmMachine) resume(t *rapid.T, g string) {
	if err := s.q.ResumeGroup(s.ctx, g); err != nil {
		t.Fatalf("ResumeGroup(%q): %v", g, err)
	}
	t.Logf("resumed %q", g)
	s.m.group(g).paused = false
	s.m.cov.resumes++
}

func (s *gmMachine) purge(t *rapid.T, g string) {
	n, err := s.q.PurgeGroup(s.ctx, g)
	if err != nil {
		t.Fatalf("PurgeGroup(%q): %v", g, err)
	}
	gr := s.m.group(g)
	if n != int64(len(gr.items)) {
		t.Fatalf("PurgeGroup(%q) = %d, model has %d ready: %v", g, n, len(gr.items), gr.items)
	}
	t.Logf("purged %q: %v", g, gr.items)
	for _, it := range gr.items {
		s.m.finish(it, "purged")
	}
	s.m.cov.purged += len(gr.items)
	gr.items = nil
}

// describe renders the model, for failure messages.
func (s *gmMachine) describe() string {
	m := s.m
	var b strings.Builder
	fmt.Fprintf(&b, "model (limit %d, grouped %v):\n  ready without a group: %v\n", m.limit, m.grouped, m.plain)
	for _, g := range gmAllKeys {
		if gr := m.groups[g]; gr != nil {
			fmt.Fprintf(&b, "  group %q: ready %v, leased %d, paused %v\n", g, gr.items, gr.flight, gr.paused)
		}
	}
	var pending []string
	for _, p := range m.pending {
		pending = append(pending, p.it.String())
	}
	fmt.Fprintf(&b, "  delayed: %v\n  leases:", pending)
	for _, l := range slices.SortedFunc(maps.Values(m.leases), func(a, b *gmLease) int { return cmp.Compare(a.serial, b.serial) }) {
		fmt.Fprintf(&b, " %s", l.it)
		if l.counted {
			fmt.Fprintf(&b, "[%q]", l.group)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// gmStored is what the queue's keys hold, read in one round trip.
type gmStored struct {
	ready, turnSet, paused  []string
	groups                  map[string][]string
	delayed                 []string
	items, inflight         map[string]string
	flight, tok             map[string]string
	leases, size            []redis.Z
	retry, claimed, deadLen int64
}

func (s *gmMachine) read(t *rapid.T) *gmStored {
	ctx, k := s.ctx, s.k
	var (
		ready, turns, paused, delayedZ *redis.StringSliceCmd
		items, inflight, flight, tok   *redis.MapStringStringCmd
		leases, size                   *redis.ZSliceCmd
		retry, claimed, dead           *redis.IntCmd
	)
	groups := map[string]*redis.StringSliceCmd{}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ready = p.LRange(ctx, k.Ready, 0, -1)
		turns = p.SMembers(ctx, k.GTurn)
		paused = p.SMembers(ctx, k.GPaused)
		for _, g := range gmAllKeys {
			groups[g] = p.ZRange(ctx, k.GroupItems(g), 0, -1)
		}
		delayedZ = p.ZRange(ctx, k.Delayed, 0, -1)
		items = p.HGetAll(ctx, k.Items)
		inflight = p.HGetAll(ctx, k.Inflight)
		flight = p.HGetAll(ctx, k.GFlight)
		tok = p.HGetAll(ctx, k.GTok)
		leases = p.ZRangeWithScores(ctx, k.Leases, 0, -1)
		size = p.ZRangeWithScores(ctx, k.GSize, 0, -1)
		retry = p.ZCard(ctx, k.Retry)
		claimed = p.LLen(ctx, k.Claimed)
		dead = p.LLen(ctx, k.DeadReady)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the queue's keys: %v", err)
	}
	st := &gmStored{
		ready: ready.Val(), turnSet: turns.Val(), paused: paused.Val(), groups: map[string][]string{},
		delayed: delayedZ.Val(), items: items.Val(), inflight: inflight.Val(),
		flight: flight.Val(), tok: tok.Val(), leases: leases.Val(), size: size.Val(),
		retry: retry.Val(), claimed: claimed.Val(), deadLen: dead.Val(),
	}
	for g, c := range groups {
		st.groups[g] = c.Val()
	}
	slices.Reverse(st.ready) // next first
	return st
}

// decodeVal returns the value of a stored envelope.
func (s *gmMachine) decodeVal(t *rapid.T, where, raw string) int {
	it, err := modelDecode(raw)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return it.val
}

func itemVals(its []*gmItem) []int {
	out := make([]int, len(its))
	for i, it := range its {
		out[i] = it.val
	}
	return out
}

// check compares the stored state and what the public API reports with
// the model.
func (s *gmMachine) check(t *rapid.T) {
	m := s.m
	m.cov.steps++
	st := s.read(t)
	stored := map[int]int{}
	count := func(vs []int) {
		for _, v := range vs {
			stored[v]++
		}
	}

	// The ready list: items without a group in order, and turns.
	var plain []int
	turns := map[string]bool{}
	for _, raw := range st.ready {
		if g, ok := strings.CutPrefix(raw, gmTurn); ok {
			if turns[g] {
				t.Fatalf("the ready list holds two turns of group %q\n%s", g, s.describe())
			}
			turns[g] = true
			continue
		}
		plain = append(plain, s.decodeVal(t, "ready list", raw))
	}
	if want := itemVals(m.plain); !slices.Equal(plain, want) {
		t.Fatalf("ready list without a group (next first) = %v, model %v\n%s", plain, want, s.describe())
	}
	count(plain)
	turnSet := map[string]bool{}
	for _, g := range st.turnSet {
		turnSet[g] = true
	}
	if !maps.Equal(turns, turnSet) {
		t.Fatalf("turns in the ready list %v, gturn %v", slices.Sorted(maps.Keys(turns)), st.turnSet)
	}
	if st.claimed != 0 || st.retry != 0 || st.deadLen != 0 {
		t.Fatalf("claimed list %d, retry set %d, dead letters %d; want none", st.claimed, st.retry, st.deadLen)
	}

	// Each group: its ready items in order, its leases, its size, its
	// turn.
	for _, g := range gmAllKeys {
		var vals []int
		for _, member := range st.groups[g] {
			if len(member) < lua.SeqLen {
				t.Fatalf("group %q: member %q is shorter than its seq prefix", g, member)
			}
			vals = append(vals, s.decodeVal(t, fmt.Sprintf("group %q", g), member[lua.SeqLen:]))
		}
		var want []int
		if gr := m.groups[g]; gr != nil {
			want = itemVals(gr.items)
		}
		if !slices.Equal(vals, want) {
			t.Fatalf("group %q (next first) = %v, model %v\n%s", g, vals, want, s.describe())
		}
		count(vals)
		if m.mayLease(g) && !turnSet[g] {
			t.Fatalf("group %q may lease but has no turn out: consumers would wait for ever\n%s", g, s.describe())
		}
	}
	wantFlight, wantSize := map[string]string{}, map[string]float64{}
	var wantPaused []string
	for g, gr := range m.groups {
		if gr.flight > 0 {
			wantFlight[g] = strconv.Itoa(gr.flight)
		}
		if n := len(gr.items) + gr.flight; n > 0 {
			wantSize[g] = float64(n)
		}
		if gr.paused {
			wantPaused = append(wantPaused, g)
		}
		if gr.flight > m.limit {
			t.Fatalf("group %q holds %d leases, limit %d", g, gr.flight, m.limit)
		}
	}
	if !maps.Equal(st.flight, wantFlight) {
		t.Fatalf("gflight = %v, model %v\n%s", st.flight, wantFlight, s.describe())
	}
	size := map[string]float64{}
	for _, z := range st.size {
		size[z.Member.(string)] = z.Score
	}
	if !maps.Equal(size, wantSize) {
		t.Fatalf("gsize = %v, model %v\n%s", size, wantSize, s.describe())
	}
	slices.Sort(st.paused)
	slices.Sort(wantPaused)
	if !slices.Equal(st.paused, wantPaused) {
		t.Fatalf("gpaused = %v, model %v", st.paused, wantPaused)
	}

	// The delayed set, in due order.
	var delayedVals []int
	for _, member := range st.delayed {
		raw, ok := st.items[member[lua.SeqLen:]]
		if !ok || len(raw) < lua.SeqLen {
			t.Fatalf("delayed member %q has no item", member)
		}
		delayedVals = append(delayedVals, s.decodeVal(t, "delayed", raw[lua.SeqLen:]))
	}
	var wantDelayed []int
	for _, p := range m.pending {
		wantDelayed = append(wantDelayed, p.it.val)
	}
	if !slices.Equal(delayedVals, wantDelayed) {
		t.Fatalf("delayed set (due first) = %v, model %v", delayedVals, wantDelayed)
	}
	count(delayedVals)

	// Leases: learn their tokens; each of a group is in gtok.
	byVal := map[int]redis.Z{}
	for _, z := range st.leases {
		token := z.Member.(string)
		raw, ok := st.inflight[token]
		if !ok {
			t.Fatalf("lease %s has no inflight envelope", token)
		}
		v := s.decodeVal(t, "inflight", raw)
		byVal[v] = z
		stored[v]++
	}
	if len(st.inflight) != len(st.leases) {
		t.Fatalf("leases set holds %d tokens, inflight hash %d", len(st.leases), len(st.inflight))
	}
	wantTok := map[string]string{}
	for _, l := range m.leases {
		z, ok := byVal[l.it.val]
		if !ok {
			t.Fatalf("%s is leased in the model (delivery %d), not in the leases set\n%s", l.it, l.serial, s.describe())
		}
		token := z.Member.(string)
		if l.token != "" && l.token != token {
			t.Fatalf("%s: lease token %s, model %s", l.it, token, l.token)
		}
		l.token = token
		if !s.b.real && int64(z.Score) != l.deadline {
			t.Fatalf("%s: lease deadline %d, model %d", l.it, int64(z.Score), l.deadline)
		}
		if l.counted {
			wantTok[token] = l.group
		}
	}
	if len(byVal) != len(m.leases) {
		t.Fatalf("%d leases stored, model %d\n%s", len(byVal), len(m.leases), s.describe())
	}
	if !maps.Equal(st.tok, wantTok) {
		t.Fatalf("gtok = %v, model %v", st.tok, wantTok)
	}

	// Nothing lost, nothing stored twice.
	for v, it := range m.alive {
		if stored[v] != 1 {
			t.Fatalf("%s (offered, not acked, taken or purged) is stored %d times\n%s", it, stored[v], s.describe())
		}
	}
	for v, n := range stored {
		if m.alive[v] == nil {
			t.Fatalf("v%d is stored %d times after it was %s", v, n, m.gone[v])
		}
	}

	// The public API.
	ready := len(m.plain)
	for _, gr := range m.groups {
		ready += len(gr.items)
	}
	stats, err := s.q.Stats(s.ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if stats.Ready != int64(ready) || stats.Delayed != int64(len(m.pending)) || stats.Retry != 0 || stats.Inflight != int64(len(m.leases)) {
		t.Fatalf("Stats = ready %d, delayed %d, retry %d, inflight %d; model %d, %d, 0, %d\n%s",
			stats.Ready, stats.Delayed, stats.Retry, stats.Inflight, ready, len(m.pending), len(m.leases), s.describe())
	}
	if sum := stats.Ready + stats.Delayed + stats.Retry + stats.Inflight; sum != int64(len(m.alive)) {
		t.Fatalf("Stats count %d items, %d are stored", sum, len(m.alive))
	}
	s.checkGroups(t)
}

// checkSize compares Size, which counts as Stats does, with the model.
func (s *gmMachine) checkSize(t *rapid.T) {
	ready := len(s.m.plain)
	for _, gr := range s.m.groups {
		ready += len(gr.items)
	}
	if n, err := s.q.Size(s.ctx); err != nil || n != int64(ready) {
		t.Fatalf("Size = %d, %v; model %d", n, err, ready)
	}
}

// checkGroups compares Groups with the model: the groups with ready or
// leased items, largest first, then by key.
func (s *gmMachine) checkGroups(t *rapid.T) {
	m := s.m
	var want []blocking.GroupInfo
	for g, gr := range m.groups {
		if len(gr.items)+gr.flight > 0 {
			want = append(want, blocking.GroupInfo{Key: g, Ready: int64(len(gr.items)), InFlight: int64(gr.flight), Paused: gr.paused})
		}
	}
	slices.SortFunc(want, func(a, b blocking.GroupInfo) int {
		return cmp.Or(cmp.Compare(b.Ready+b.InFlight, a.Ready+a.InFlight), strings.Compare(a.Key, b.Key))
	})
	got, err := s.q.Groups(s.ctx, 0, 10)
	if err != nil {
		t.Fatalf("Groups: %v", err)
	}
	for _, g := range got {
		if g.InFlight > int64(m.limit) {
			t.Fatalf("Groups reports group %q with %d in flight, limit %d", g.Key, g.InFlight, m.limit)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Groups = %+v\n  model %+v\n%s", got, want, s.describe())
	}
}

// drain resumes every group, acks every lease, makes every delayed item
// due, and takes every item; then nothing of the groups may be left.
func (s *gmMachine) drain(t *rapid.T) {
	m := s.m
	for _, g := range gmKeys {
		if gr := m.groups[g]; gr != nil && gr.paused {
			if err := s.q.ResumeGroup(s.ctx, g); err != nil {
				t.Fatalf("ResumeGroup(%q): %v", g, err)
			}
			gr.paused = false
		}
	}
	for _, l := range slices.SortedFunc(maps.Values(m.leases), func(a, b *gmLease) int { return cmp.Compare(a.serial, b.serial) }) {
		if err := l.d.Ack(s.ctx); err != nil {
			t.Fatalf("drain: Ack of %s: %v", l.it, err)
		}
		m.settle(l)
		m.finish(l.it, "acked")
	}
	if len(m.pending) > 0 {
		s.makeDue(t)
	}
	s.check(t)
	s.checkSize(t)
	// Nothing is leased now: Take takes every ready item, round-robin
	// over the groups, in one call.
	if capacity := m.capacity(false); capacity > 0 {
		ctx, cancel := context.WithTimeout(s.ctx, modelReceiveWait)
		vs, err := s.cq.TakeBatch(ctx, 256)
		cancel()
		if err != nil || len(vs) != min(256, capacity) {
			t.Fatalf("drain: TakeBatch(256) = %v, %v; want %d items\n%s", vs, err, capacity, s.describe())
		}
		s.took(t, "drain: TakeBatch(256)", vs)
	}
	if len(m.alive) > 0 {
		t.Fatalf("drain: nothing may be taken, but %d items are stored\n%s", len(m.alive), s.describe())
	}
	for _, v := range m.offered {
		if m.gone[v] == "" {
			t.Fatalf("drain: v%d was offered and never delivered", v)
		}
	}
	// A last Take drops the turns of groups purged meanwhile.
	if v, ok, err := s.cq.Poll(s.ctx, 0); err != nil || ok {
		t.Fatalf("drain: Poll(0) on a drained queue = v%d, %v, %v", v, ok, err)
	}
	s.check(t)
	s.checkSize(t)
	if gs, err := s.q.Groups(s.ctx, 0, 10); err != nil || len(gs) != 0 {
		t.Fatalf("drain: Groups = %+v, %v; want none", gs, err)
	}
	k := s.k
	for _, key := range []string{k.Ready, k.GTurn, k.GSize, k.GFlight, k.GTok, k.GWait, k.GPaused,
		k.GroupItems("a"), k.GroupItems("b"), k.GroupItems("c"), k.GroupItems("")} {
		if n, err := s.rdb.Exists(s.ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("drain: key %q is left behind (%d, %v)", key, n, err)
		}
	}
}

func runGroupModel(t *testing.T, env *gmEnv) {
	env.outer = t
	env.cov = &gmCoverage{}
	start := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		s := newGMMachine(rt, env)
		defer s.close()
		s.run(rt)
		s.drain(rt)
	})
	t.Logf("%v; coverage: %+v", time.Since(start).Round(time.Millisecond), *env.cov)
}

func TestGroupModel(t *testing.T) {
	t.Parallel()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		runGroupModel(t, &gmEnv{b: &gmOnMiniredis})
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		rdb := redistest.Standalone(t)
		frdb := newModelFencedClient(rdb.Options().Addr)
		t.Cleanup(func() { _ = frdb.Close() })
		runGroupModel(t, &gmEnv{b: &gmOnRedis, rdb: rdb, frdb: frdb})
	})
}
