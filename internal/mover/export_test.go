package mover

import (
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// Services reports how many services are registered, and for rdb how many
// queues its service transfers (-1 when it has none).
func Services(rdb redis.UniversalClient) (total, queues int) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	s := registry.services[rdb]
	if s == nil {
		return len(registry.services), -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(registry.services), len(s.workers)
}

// SleepPrecise is sleepPrecise, for tests.
var SleepPrecise = sleepPrecise

// Expire makes s's reading of the policy due, as if PolicyMaxAge had
// passed.
func (s *Server) Expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due = time.Time{}
	s.setNext()
}

// HasServerRecord reports whether the registry holds a Server record for
// the client c points to.
func HasServerRecord(c weak.Pointer[redis.Client]) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.servers[c] != nil
}
