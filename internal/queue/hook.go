package queue

// CoreOf returns the core of a *blocking.Queue[T] (nil for anything else).
// Package blocking sets it when it is initialised, and nothing writes it
// afterwards: it is how package delayed reaches the queue it feeds without
// blocking exporting its machinery.
var CoreOf func(q any) *Core //nolint:gochecknoglobals // set once, by blocking's init

// PartsOf returns the cores of the partitions of a *blocking.Queue[T]
// opened WithPartitions(n > 1), partition 0 first (nil for a queue of one
// partition, and for anything else). Set once, by blocking's init, as
// CoreOf.
var PartsOf func(q any) []*Core //nolint:gochecknoglobals // set once, by blocking's init
