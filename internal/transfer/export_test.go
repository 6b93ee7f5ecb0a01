package transfer

import "github.com/redis/go-redis/v9"

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
