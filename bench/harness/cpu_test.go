package harness

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redelay/redelay/bench/contestants"
)

func TestStatCPU(t *testing.T) {
	// Fields 3..15 of a real stat line: utime 1234 and stime 56 ticks.
	tail := " S 1 1 1 0 -1 4194560 2000 0 0 0 1234 56 0 0 20 0 11 0 100 0 0"
	for name, comm := range map[string]string{
		"plain":                    "(node)",
		"spaces":                   "(my worker)",
		"parentheses in the name":  "(a) 1 2 (3))",
		"a name that ends in ) S ": "(x) S 9 9)",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := statCPU("4242 " + comm + tail)
			if err != nil {
				t.Fatal(err)
			}
			if want := 12900 * time.Millisecond; got != want {
				t.Errorf("statCPU = %v, want %v", got, want)
			}
		})
	}
	for name, stat := range map[string]string{
		"empty":           "",
		"no command name": "4242 node S 1 1 1",
		"truncated":       "4242 (node) S 1 1 1 0 -1",
		"not a number":    "4242 (node) S 1 1 1 0 -1 4194560 2000 0 0 0 12x4 56 0",
		"negative":        "4242 (node) S 1 1 1 0 -1 4194560 2000 0 0 0 -1 56 0",
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := statCPU(stat); err == nil || !strings.Contains(err.Error(), "stat") {
				t.Errorf("statCPU = %v, %v; want an error that names the stat text", got, err)
			}
		})
	}
}

// ownProcess is a contestant whose client process is this test's own.
type ownProcess struct{ fake }

func (*ownProcess) ClientPid() int { return os.Getpid() }

func TestClientCPUAddsClientProcess(t *testing.T) {
	plain, own := &fake{name: "plain"}, &ownProcess{}
	read := func(c contestants.Contestant) time.Duration {
		t.Helper()
		d, err := clientCPU(c)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	p0, o0 := read(plain), read(own)
	// Burn 200 ms of this process's CPU (CPU time, so a busy machine only
	// makes it take longer).
	const burn = 200 * time.Millisecond
	x := 0
	for read(plain)-p0 < burn {
		for i := range 100000 {
			x += i
		}
	}
	_ = x
	p1, o1 := read(plain), read(own)
	// The own-process figure counts the same CPU twice (getrusage and
	// /proc, the latter in 10 ms ticks).
	if d, pd := o1-o0, p1-p0; d < 2*pd-30*time.Millisecond {
		t.Errorf("with the client process: %v, want about twice the process's own %v", d, pd)
	}
}
