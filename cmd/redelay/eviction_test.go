package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redelay/redelay/internal/redistest"
)

// stats --watch warns once, not at every sample.
func TestStatsWatchWarnsOfEvictionOnce(t *testing.T) {
	srv := redistest.StartServer(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	name := fixture(t, srv.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := command(ctx, "--redis", "redis://"+srv.Addr()+"/0", "stats", name, "--watch", "--interval", "50ms", "-o", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(stdout)
	for samples := 0; samples < 5; samples++ {
		if !s.Scan() {
			t.Fatalf("stats --watch ended after %d samples: %v", samples, s.Err())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stats --watch interrupted: %v\nstderr:\n%s", err, errOut.String())
	}
	if n := strings.Count(errOut.String(), "maxmemory-policy allkeys-lru"); n != 1 {
		t.Fatalf("%d warnings in 5 samples, want 1:\n%s", n, errOut.String())
	}
}

// stats warns on stderr when the Redis server may evict keys, and says
// which policy in -o json; under noeviction it says nothing.
func TestStatsWarnsOfEviction(t *testing.T) {
	redistest.ForEachDedicated(t, func(t *testing.T, d *redistest.Dedicated) {
		rdb := d.Client()
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		for _, policy := range []string{"allkeys-lru", "volatile-lru", "noeviction"} {
			t.Run(policy, func(t *testing.T) {
				// On a Cluster, one master of three: a policy on any master counts.
				d.ConfigSetOne(t, "maxmemory-policy", policy)
				for _, args := range [][]string{{"stats"}, {"stats", name}, {"stats", name, "-o", "json"}} {
					r := cli(t, with(conn, args...)...)
					if r.code != 0 {
						t.Fatalf("redelay %q: %v", args, r)
					}
					warned := strings.Contains(r.stderr, "redelay: warning: Redis may evict keys when it is full (maxmemory-policy "+policy+")")
					if warned != (policy != "noeviction") || strings.Count(r.stderr, "\n") > 1 {
						t.Fatalf("redelay %q under %s: %v", args, policy, r)
					}
					if !strings.Contains(r.stdout, name) {
						t.Fatalf("redelay %q: no row of %s: %v", args, name, r)
					}
					if args[len(args)-1] == "json" && !strings.Contains(r.stdout, `"eviction": "`+policy+`"`) {
						t.Fatalf("redelay %q: no eviction %q: %v", args, policy, r)
					}
					t.Logf("redelay %s under %s: stderr %q", strings.Join(args, " "), policy, r.stderr)
				}
			})
		}
	})
}

// A user whose ACL refuses INFO sees the stats, and no warning.
func TestStatsEvictionUnknown(t *testing.T) {
	srv := redistest.StartServer(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	admin := srv.Client(t)
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "app", "on", ">app-pass", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	name := fixture(t, admin)
	r := cli(t, "--redis", "redis://app:app-pass@"+srv.Addr()+"/0", "stats", name, "-o", "json")
	if r.code != 0 || r.stderr != "" || strings.Contains(r.stdout, "eviction") || !strings.Contains(r.stdout, name) {
		t.Fatalf("stats as a user without INFO: %v", r)
	}
}
