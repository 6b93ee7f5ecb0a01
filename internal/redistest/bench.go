package redistest

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/osproc"
)

// Paired runs two operations alternately, one call of each per op
// (which goes first alternates too), and reports the mean time of each
// ("<name>-ns"), the first's extra time over the second ("extra-ns") and
// the ratio of the first to the second. Both see the same moment's machine:
// on a shared or virtual machine the latency of a single round trip drifts
// between two consecutive benchmarks by more than the difference being
// measured (see docs/benchmarks.md). The extra time is the steadier figure:
// the ratio still shrinks when every round trip gets slower.
func Paired(b *testing.B, nameA string, a func() error, nameB string, fb func() error) {
	b.Helper()
	var ta, tb time.Duration
	timed := func(f func() error, acc *time.Duration) {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*acc += time.Since(t0)
	}
	for i := range b.N {
		if i%2 == 0 {
			timed(a, &ta)
			timed(fb, &tb)
		} else {
			timed(fb, &tb)
			timed(a, &ta)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(ta.Nanoseconds())/float64(b.N), nameA+"-ns")
	b.ReportMetric(float64(tb.Nanoseconds())/float64(b.N), nameB+"-ns")
	b.ReportMetric(float64((ta-tb).Nanoseconds())/float64(b.N), "extra-ns")
	b.ReportMetric(float64(ta)/float64(tb), "ratio")
}

// CommandStat is one command's line of a server's INFO commandstats.
type CommandStat struct {
	Calls, Usec int64
}

// ReadCommandStat reads the calls and total microseconds of cmd (lower
// case, as "evalsha") from INFO commandstats of the server rdb talks to.
func ReadCommandStat(tb testing.TB, rdb *redis.Client, cmd string) CommandStat {
	tb.Helper()
	return ReadCommandStats(tb, rdb)[cmd]
}

// PerCall is the server's mean time per call, µs.
func (st CommandStat) PerCall() float64 {
	if st.Calls <= 0 {
		return 0
	}
	return float64(st.Usec) / float64(st.Calls)
}

// ProcessCPU is the CPU time (user and system) this process has used.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	d, err := osproc.CPU()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
