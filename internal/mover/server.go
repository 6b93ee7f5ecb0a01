package mover

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/store"
)

// Timings of the eviction policy check (see Server).
const (
	// PolicyMaxAge is how long a reading of the policy is used before the
	// next check reads it again, so that a policy changed on a running
	// server, or a failover to a server configured otherwise, is seen.
	PolicyMaxAge = time.Minute
	// policyRetry is how long after a failed read (the server unreachable)
	// the next check tries again.
	policyRetry = 5 * time.Second
	// CheckTimeout bounds one background read of the policy.
	CheckTimeout = 5 * time.Second
)

// Server is what this process knows of the Redis deployment behind one
// client: its maxmemory-policy. A policy that evicts lets Redis delete a
// queue's keys when it is full (items offered and acknowledged vanish), so
// the policy is read once per client, when something already running
// first asks (a transfer run, an offer, a Stats call), again when the
// reading is older than PolicyMaxAge, and warned of once per client
// through the logger of the queue that checks. A server that refuses INFO
// (an ACL without @dangerous) is never asked again; the policy stays
// unknown. No lock is held across the read, and at most one read of a
// client is in flight. A test kit also records here the clock of a
// server whose time it moves (SetClock) and a shorter block (LimitBlock).
type Server struct {
	// next is when Claim says that a check has something to do, in Unix
	// ns: read the policy, or warn of it. math.MaxInt64 while a check is
	// claimed or a read is in flight, and when nothing is ever left to
	// do (INFO refused).
	next atomic.Int64

	mu      sync.Mutex
	policy  string        // as last read; "" while unknown
	read    bool          // a read succeeded
	due     time.Time     // when to read again
	refused bool          // the server refused INFO
	reading chan struct{} // closed when the read in flight ends; nil when none
	warned  string        // the evicting policy last warned of

	clock atomic.Pointer[func() time.Time] // SetClock's; nil: time.Now
	block atomic.Int64                     // LimitBlock's, in ns; 0: none
}

// LimitBlock makes the blocking waits of queues opened on the client
// afterwards block on the server for at most d at a time (see
// store.Client.LimitBlock): a test kit's embedded server, where a queue
// closed while its consumer waits should not wait for a long block to end.
func (s *Server) LimitBlock(d time.Duration) { s.block.Store(int64(d)) }

// Block is LimitBlock's limit; 0 when none was set (a nil Server too).
func (s *Server) Block() time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(s.block.Load())
}

// Now is the time on the server's clock as this process keeps it: the
// library's own time checks (a lease surely held, an item past its TTL,
// a due time in the past) read it, so that they agree with the scripts,
// which read the server's TIME. It is time.Now, unless a test kit drives
// the server's clock (SetClock). A nil Server reads time.Now.
func (s *Server) Now() time.Time {
	if s != nil {
		if f := s.clock.Load(); f != nil {
			return (*f)()
		}
	}
	return time.Now()
}

// SetClock makes Now read now, for a server whose clock is not the real
// one: an embedded Redis whose time a test moves (package redelaytest).
// Queues opened on the client before or after read it alike.
func (s *Server) SetClock(now func() time.Time) {
	s.clock.Store(&now)
}

// ServerOf returns the record of the deployment behind rdb: one per
// *redis.Client or *redis.ClusterClient in the process, held by a weak
// pointer to the client and forgotten when the client is garbage
// collected; a new one per call for other client types.
func ServerOf(rdb redis.UniversalClient) *Server {
	switch c := rdb.(type) {
	case *redis.Client:
		if c != nil {
			return serverOf(c)
		}
	case *redis.ClusterClient:
		if c != nil {
			return serverOf(c)
		}
	}
	return &Server{}
}

func serverOf[C any](c *C) *Server {
	key := weak.Make(c)
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if s := registry.servers[key]; s != nil {
		return s
	}
	s := &Server{}
	registry.servers[key] = s
	runtime.AddCleanup(c, forgetServer, any(key))
	return s
}

// forgetServer drops the record of a client that was garbage collected.
func forgetServer(key any) {
	registry.mu.Lock()
	delete(registry.servers, key)
	registry.mu.Unlock()
}

// Claim reports whether a check has something to do, and if so reserves
// it for the caller, who must then call Check: one atomic load and a
// clock read when there is nothing to do, so that it may sit on a hot
// path.
func (s *Server) Claim() bool {
	if s == nil {
		return false
	}
	n := s.next.Load()
	return time.Now().UnixNano() >= n && s.next.CompareAndSwap(n, math.MaxInt64)
}

// Check reads the policy when a reading is due, and warns through log
// when the policy evicts and no queue of the client warned of it yet. A
// read in flight is not waited for.
func (s *Server) Check(ctx context.Context, c *store.Client, log *slog.Logger) {
	s.eviction(ctx, c, log, false)
}

// Eviction returns the policy, "" while unknown: it reads it first when a
// reading is due, and waits for a read in flight when none succeeded yet
// (or until ctx ends). It warns of nothing.
func (s *Server) Eviction(ctx context.Context, c *store.Client) string {
	return s.eviction(ctx, c, nil, true)
}

// Known returns the policy as last read, "" while unknown, without a
// network call.
func (s *Server) Known() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy
}

func (s *Server) eviction(ctx context.Context, c *store.Client, log *slog.Logger, wait bool) string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	for s.reading != nil && wait && !s.read && !s.refused {
		ch := s.reading
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ""
		}
		s.mu.Lock()
	}
	if s.reading != nil || s.refused || time.Now().Before(s.due) {
		policy, warn := s.policy, s.owe(log)
		if s.reading == nil {
			s.setNext()
		}
		s.mu.Unlock()
		if warn {
			warnEvicting(log, policy)
		}
		return policy
	}
	done := make(chan struct{})
	s.reading = done
	s.next.Store(math.MaxInt64)
	s.mu.Unlock()

	policy, err := c.EvictionPolicy(ctx)
	now := time.Now()

	s.mu.Lock()
	switch {
	case err == nil:
		s.policy, s.read, s.due = policy, true, now.Add(PolicyMaxAge)
	case store.InfoRefused(err):
		s.refused = true
	default:
		s.due = now.Add(policyRetry) // the last reading stands meanwhile
	}
	if !store.Evicts(s.policy) {
		s.warned = "" // warn again if it evicts again
	}
	policy, warn := s.policy, s.owe(log)
	s.reading = nil
	close(done)
	s.setNext()
	s.mu.Unlock()
	if err != nil && log != nil {
		log.Debug("redelay: cannot read the Redis maxmemory-policy; not checked", "err", err, "refused", store.InfoRefused(err))
	}
	if warn {
		warnEvicting(log, policy)
	}
	return policy
}

// owe reports whether the caller, logging to log, is to warn of the
// policy, and records that it is. s.mu is held.
func (s *Server) owe(log *slog.Logger) bool {
	if log == nil || !store.Evicts(s.policy) || s.warned == s.policy {
		return false
	}
	s.warned = s.policy
	return true
}

// setNext sets when Claim next has something to do. s.mu is held.
func (s *Server) setNext() {
	switch {
	case store.Evicts(s.policy) && s.warned != s.policy:
		s.next.Store(0) // a warning owed: the next check with a logger
	case s.refused:
		s.next.Store(math.MaxInt64)
	default:
		s.next.Store(s.due.UnixNano())
	}
}

// warnEvicting is the warning of a policy that evicts.
func warnEvicting(log *slog.Logger, policy string) {
	log.Warn("redelay: Redis may evict keys when it reaches maxmemory, and queued items, leases or resend records then vanish without an error; set maxmemory-policy noeviction (see docs/reliability.md)",
		"maxmemory_policy", policy)
}
