package contestants

import (
	"fmt"
	"sort"
	"sync"
)

// Registry of contestants.
//
// Each contestant file registers itself from an init function, so that the
// harness runs whatever contestants are compiled in:
//
//	func init() {
//		Register("asynq", func() Contestant { return &Asynq{} })
//	}
//
// Register panics on an empty or duplicate name. The constructor must be
// cheap and must not touch the network: it is called once per workload,
// and the fresh value is then set up with Setup against that workload's own
// Redis server. Name() of the value returned must equal the registered name.
//
// All returns the registered names in run order (registration order sorted
// by name, so runs are reproducible); New builds a fresh contestant.

type entry struct {
	name string
	f    func() Contestant
}

var (
	regMu    sync.Mutex
	registry []entry
)

// Register adds a contestant constructor under name. Call it from init.
func Register(name string, f func() Contestant) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || f == nil {
		panic("contestants.Register: empty name or nil constructor")
	}
	for _, e := range registry {
		if e.name == name {
			panic(fmt.Sprintf("contestants.Register: duplicate name %q", name))
		}
	}
	registry = append(registry, entry{name, f})
	sort.Slice(registry, func(i, j int) bool { return registry[i].name < registry[j].name })
}

// All returns the names of the registered contestants, sorted.
func All() []string {
	regMu.Lock()
	defer regMu.Unlock()
	names := make([]string, len(registry))
	for i, e := range registry {
		names[i] = e.name
	}
	return names
}

// New returns a fresh contestant registered under name, or nil when there
// is none.
func New(name string) Contestant {
	regMu.Lock()
	defer regMu.Unlock()
	for _, e := range registry {
		if e.name == name {
			return e.f()
		}
	}
	return nil
}
