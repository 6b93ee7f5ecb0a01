package main

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentServer returns the address of a TCP server that accepts every
// connection and never answers: a Redis that hangs. It stops with the
// test.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A Redis that does not answer fails a command after --timeout, not
// after go-redis's own dial and read timeouts (5 s and 3 s), and the
// error names --timeout and where the command waited. No timer fires
// early, so a command given --timeout 6s that fails sooner was cut by
// another timeout; the test bounds nothing above, which a loaded machine
// could stretch.
func TestTimeoutHonoured(t *testing.T) {
	addr := silentServer(t)
	for _, c := range []struct {
		name  string
		args  []string
		where string
	}{
		{"standalone", []string{"--redis", "redis://" + addr + "/0", "queues"}, "redis://" + addr + "/0"},
		{"cluster", []string{"--cluster", addr, "queues"}, "cluster " + addr},
		{"stats", []string{"--redis", "redis://" + addr + "/0", "stats"}, "redis://" + addr + "/0"},
		{"reschedule", []string{"--redis", "redis://" + addr + "/0", "reschedule", "q", "id", "1h"}, "redis://" + addr + "/0"},
		{"dashboard", []string{"--redis", "redis://" + addr + "/0", "dashboard", "--listen", "127.0.0.1:0"}, "redis://" + addr + "/0"},
	} {
		for _, timeout := range []string{"1s", "6s"} {
			if timeout == "6s" && c.name != "standalone" && c.name != "cluster" {
				continue
			}
			t.Run(c.name+"-"+timeout, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				r := cli(t, with([]string{"--timeout", timeout}, c.args...)...)
				took := time.Since(start)
				t.Logf("--timeout %s: failed after %v", timeout, took)
				want := "no answer from Redis within --timeout " + timeout
				if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, c.where) ||
					strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("want exit 1 and %q, at %s, on one line; got %v", want, c.where, r)
				}
				if d, _ := time.ParseDuration(timeout); took < d {
					t.Errorf("failed after %v, before --timeout %s", took, timeout)
				}
			})
		}
	}
}
