package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// dashboard serves the dashboard at the address it prints, and exits 0
// when interrupted.
func TestDashboard(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := fixture(t, rdb)
		serve(t, with(connFlags(t, rdb), "dashboard", "--listen", "127.0.0.1:0"), func(url string, _ []string) {
			if code, body := httpGet(t, url); code != http.StatusOK || !strings.Contains(body, name) {
				t.Fatalf("GET %s: %d, without %s:\n%.500s", url, code, name, body)
			}
		})
	})
}

// --read-only refuses every change; an address beyond loopback, without
// credentials (--insecure), is warned about.
func TestDashboardReadOnly(t *testing.T) {
	rdb := redistest.Standalone(t)
	serve(t, with(connFlags(t, rdb), "dashboard", "--read-only", "--insecure", "--listen", "0.0.0.0:0"), func(url string, stderr []string) {
		if !slices.ContainsFunc(stderr, func(l string) bool { return strings.Contains(l, "warning: listening on") }) {
			t.Errorf("no warning for a dashboard beyond loopback: %q", stderr)
		}
		resp, err := newHTTPClient().Post(url+"actions/pause?q=x", "application/x-www-form-urlencoded", strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST to a read-only dashboard: %s", resp.Status)
		}
	})
}

// dashboard --demo needs no Redis: it serves demo queues with traffic.
func TestDashboardDemo(t *testing.T) {
	serve(t, []string{"--redis", "redis://127.0.0.1:1/0", "dashboard", "--demo", "--listen", "127.0.0.1:0"}, func(url string, _ []string) {
		code, body := httpGet(t, url)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", url, code)
		}
		for _, q := range []string{"orders", "emails", "reports", "invoices"} {
			if !strings.Contains(body, q) {
				t.Errorf("the demo dashboard does not show %s", q)
			}
		}
	})
}

// The demo fills its queues, moves items, and stops every goroutine it
// started (TestMain looks for leaks).
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := startDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	in := inspect.New(d.Client())
	if names, err := in.Queues(ctx); err != nil || !slices.Equal(names, demoQueues()) {
		t.Fatalf("demo queues: %q, %v", names, err)
	}
	stats := func(q string) inspect.Stats {
		t.Helper()
		st, err := in.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := stats("orders"); st.Delayed < 20 {
		t.Errorf("orders: %+v", st)
	}
	if st := stats("emails"); st.Dead < 5 {
		t.Errorf("emails: %+v", st)
	}
	if st := stats("invoices"); !st.Paused || st.Ready < 12 {
		t.Errorf("invoices: %+v", st)
	}
	if s, err := in.Schedules(ctx, "reports"); err != nil || len(s) != 2 {
		t.Errorf("reports schedules: %+v, %v", s, err)
	}
	redistest.WaitFor(t, 10*time.Second, "emails sent by the demo", func() bool {
		return stats("emails").Ready+stats("emails").Inflight+stats("emails").Retry > 0
	})
}

// serve runs the dashboard command with args, waits for the address it
// prints, calls check with it and the lines of stderr so far, then
// interrupts it and checks that it exits 0 within a few seconds.
func serve(t *testing.T, args []string, check func(url string, stderr []string)) {
	t.Helper()
	serveEnv(t, nil, args, check)
}

// serveEnv is serve with env (KEY=value) added to the environment. It
// returns all the command printed, on stdout and on stderr.
func serveEnv(t *testing.T, env, args []string, check func(url string, stderr []string)) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := command(ctx, args...)
	cmd.Env = append(cmd.Env, env...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	var seen []string
	listening := regexp.MustCompile(`^dashboard: (http://[^ ]+/)$`)
	url := ""
	for url == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("redelay %q exited before listening: %q", args, seen)
			}
			seen = append(seen, l)
			if m := listening.FindStringSubmatch(l); m != nil {
				url = m[1]
			}
		case <-ctx.Done():
			t.Fatalf("redelay %q printed no address: %q", args, seen)
		}
	}
	check(url, seen)
	start := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		seen = append(seen, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("redelay %q interrupted: %v; stderr: %q", args, err, seen)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("redelay %q took %v to stop", args, d)
	}
	return stdout.String() + strings.Join(seen, "\n")
}

// httpGet gets url and returns the status code and the body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := newHTTPClient().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// newHTTPClient returns a client that keeps no connection open after a
// request, so that the tests leave no goroutine behind.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
}
