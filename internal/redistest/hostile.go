package redistest

import "runtime"

// Nested returns inner inside depth one-element arrays: a value whose
// encoding is about depth bytes and whose indented JSON grows with the
// square of depth.
func Nested(depth int, inner any) any {
	v := inner
	for range depth {
		v = []any{v}
	}
	return v
}

// Allocated returns how many bytes the process allocated on the heap
// while f ran, after a garbage collection: a count that other goroutines
// of the process add to, so tests that bound it give it slack.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
