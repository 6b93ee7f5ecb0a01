package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/redistest"
)

// Exit status 1 and one line on stderr for a queue or item that does not
// exist, which names the command as it was called (cancel, not the
// library's delete); 2 and a pointer to --help for a usage error.
func TestExitStatus(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		missing := redistest.QueueName(t)
		failures := []struct {
			args   []string
			stderr string
		}{
			{[]string{"get", name, "nope"}, `redelay: get "` + name + `": no item "nope"` + "\n"},
			{[]string{"get", missing, "x"}, `redelay: get "` + missing + `": no such queue (not in the registry of queues, no keys)` + "\n"},
			{[]string{"stats", missing}, `redelay: stats "` + missing + `": no such queue`},
			{[]string{"ls", missing, "--state", "ready"}, `redelay: ls "` + missing + `": no such queue`},
			{[]string{"ls", missing}, `redelay: ls "` + missing + `": no such queue`},
			{[]string{"cancel", name, "nope"}, `redelay: cancel "` + name + `": no item "nope"`},
			{[]string{"requeue", missing, "--all"}, `redelay: requeue --all "` + missing + `": no such queue`},
			{[]string{"promote", name, "dead-1"}, `item "dead-1" is dead, not delayed`},
			{[]string{"reschedule", name, "nope", "1h"}, `no item "nope"`},
			{[]string{"requeue", name, "parcel-1"}, `item "parcel-1" is delayed, not dead`},
			{[]string{"pause", missing}, `no such queue`},
			{[]string{"resume", missing}, `no such queue`},
			{[]string{"schedules", missing}, `no such queue`},
			{[]string{"purge", missing, "--state", "dead", "--yes"}, `no such queue`},
		}
		for _, f := range failures {
			r := cli(t, with(conn, f.args...)...)
			if r.code != 1 || !strings.Contains(r.stderr, f.stderr) || strings.Count(r.stderr, "\n") != 1 ||
				!strings.HasPrefix(r.stderr, "redelay: ") || r.stdout != "" {
				t.Errorf("redelay %q: want exit 1 and %q on stderr, got %v", f.args, f.stderr, r)
			}
		}
		usage := []struct {
			args   []string
			stderr string
		}{
			{[]string{"frobnicate"}, `unknown command "frobnicate" for "redelay"`},
			{[]string{"stat"}, `did you mean "stats"?`},
			{[]string{"stats", "--frob"}, "unknown flag: --frob"},
			{[]string{"get", name}, "wrong number of arguments for get: want 2 (QUEUE ID), got 1"},
			{[]string{"stats", "a", "b"}, "wrong number of arguments for stats"},
			{[]string{"queues", "a"}, "wrong number of arguments for queues"},
			{[]string{"ls", name, "--state", ""}, `--state "": want one of delayed, retry, ready, inflight, dead`},
			{[]string{"ls", name, "--state", "gone"}, `--state "gone": want one of`},
			{[]string{"ls", name, "--state", "dead", "--limit", "0"}, "--limit 0: want 1 to 1000"},
			{[]string{"ls", name, "--state", "dead", "--limit", "x"}, `invalid argument "x" for "--limit" flag`},
			{[]string{"purge", name}, "--state is required"},
			{[]string{"reschedule", name, "parcel-1", "soon"}, `due time "soon": want a duration`},
			{[]string{"reschedule", name, "parcel-1", "2020-01-01T00:00:00Z"}, `parcel-1: due time 2020-01-01T00:00:00Z has passed`},
			{[]string{"requeue", name}, "give the ID of a dead letter, or --all"},
			{[]string{"requeue", name, "dead-1", "--all"}, "not both"},
			{[]string{"stats", "-o", "yaml"}, `-o "yaml": want table or json`},
			{[]string{"stats", "--timeout", "0s"}, "--timeout 0s: want a positive duration"},
			{[]string{"stats", "--watch", "--interval", "0s"}, "--interval 0s"},
			{[]string{"get", "bad name!", "x"}, "invalid queue name"},
			{[]string{"--cluster", "nohost", "stats"}, `--cluster: bad address "nohost"`},
		}
		for _, u := range usage {
			r := cli(t, with(conn, u.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, u.stderr) || !strings.Contains(r.stderr, "--help' for usage.") || r.stdout != "" {
				t.Errorf("redelay %q: want exit 2 and %q on stderr, got %v", u.args, u.stderr, r)
			}
		}
	})
}

// Every command has --help, and cobra's completion command writes the
// scripts of four shells.
func TestHelpAndCompletion(t *testing.T) {
	for _, c := range []string{"", "queues", "stats", "ls", "get", "cancel", "reschedule", "promote", "requeue",
		"purge", "pause", "resume", "schedules", "dashboard", "completion", "version"} {
		args := append(strings.Fields(c), "--help")
		out := ok(t, args...)
		if !strings.Contains(out, "Usage:") || !strings.Contains(out, "--redis") {
			t.Errorf("redelay %s --help:\n%s", c, out)
		}
	}
	if out := ok(t); !strings.Contains(out, "Available Commands:") {
		t.Errorf("redelay alone prints no help:\n%s", out)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out := ok(t, "completion", shell); !strings.Contains(out, "redelay") {
			t.Errorf("completion %s:\n%.200s", shell, out)
		}
	}
}

// Completing a queue name lists the queues of the Redis given.
func TestCompleteQueue(t *testing.T) {
	rdb := redistest.Standalone(t)
	name := fixture(t, rdb)
	out := ok(t, with(connFlags(t, rdb), "__complete", "stats", "")...)
	if !strings.Contains(out, name+"\n") {
		t.Fatalf("completions of stats do not list %s:\n%s", name, out)
	}
}

// A password in the Redis URL appears nowhere in what the command prints,
// whether the URL is unreachable, unreadable or given for a Cluster.
func TestPasswordNeverPrinted(t *testing.T) {
	const secret = "s3cret"
	url := "redis://user:" + secret + "@127.0.0.1:1/0"
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"--redis", url, "queues"}, 1},
		{[]string{"--redis", url, "stats"}, 1},
		{[]string{"--redis", url, "get", "q", "id"}, 1},
		{[]string{"--redis", url, "stats", "--watch", "--interval", "50ms"}, 1},
		{[]string{"--redis", url, "dashboard", "--listen", "127.0.0.1:0"}, 1},
		{[]string{"--redis", url, "-o", "json", "queues"}, 1},
		{[]string{"--redis", "redis://user:" + secret + "@127.0.0.1:bad/0", "queues"}, 2},
		{[]string{"--redis", "redis://user:" + secret + "@127.0.0.1:1/x", "queues"}, 2},
		{[]string{"--redis", "redis://us er:" + secret + "@127.0.0.1:1/0", "queues"}, 2},
		{[]string{"--redis", "redis://user:" + secret + "@127.0.0.1:1/0", "--cluster", "127.0.0.1:1", "queues"}, 1},
		{[]string{"--redis", "redis://user:" + secret + "@127.0.0.1:1/3", "--cluster", "127.0.0.1:1", "queues"}, 2},
		{[]string{"--redis", "http://user:" + secret + "@127.0.0.1:1/0", "queues"}, 2},
		{[]string{"--redis", "redis://127.0.0.1:1/0?password=" + secret, "queues"}, 2},
		{[]string{"--redis", "redis://127.0.0.1:1/0?username=user&password=" + secret, "stats"}, 2},
		{[]string{"--redis", "redis://127.0.0.1:1/0?username=user&password=" + secret, "dashboard", "--listen", "127.0.0.1:0"}, 2},
		{[]string{"--redis", "redis://127.0.0.1:1/0?password=" + secret, "--cluster", "127.0.0.1:1", "queues"}, 2},
	}
	for _, c := range cases {
		r := cli(t, c.args...)
		if r.code != c.code || strings.Contains(r.stdout+r.stderr, secret) || !strings.HasPrefix(r.stderr, "redelay: ") {
			t.Errorf("redelay %q: want exit %d and no password, got %v", c.args, c.code, r)
		}
		if c.code == 1 && !strings.Contains(r.stderr, "user:***@127.0.0.1:1") && !strings.Contains(r.stderr, "cluster 127.0.0.1:1 as user") {
			t.Errorf("redelay %q: the error does not say where it connected: %v", c.args, r)
		}
	}
}

// REDIS_URL stands in for --redis, and its password is never printed
// either.
func TestRedisURLEnv(t *testing.T) {
	rdb := redistest.Standalone(t)
	name := fixture(t, rdb)
	r := cliEnv(t, []string{redisURLEnv + "=redis://" + rdb.Options().Addr + "/0"}, "", "stats", name)
	if r.code != 0 || !strings.Contains(r.stdout, name) {
		t.Fatalf("stats with REDIS_URL: %v", r)
	}
	r = cliEnv(t, []string{redisURLEnv + "=redis://user:s3cret@127.0.0.1:1/0"}, "", "stats", name)
	if r.code != 1 || strings.Contains(r.stdout+r.stderr, "s3cret") || !strings.Contains(r.stderr, "redis://user:***@127.0.0.1:1/0") {
		t.Fatalf("stats with an unreachable REDIS_URL: %v", r)
	}
	r = cliEnv(t, []string{redisURLEnv + "=redis://user:s3cret@127.0.0.1:1/0"}, "", "--redis", "redis://"+rdb.Options().Addr+"/0", "stats", name)
	if r.code != 0 {
		t.Fatalf("--redis does not win over REDIS_URL: %v", r)
	}
}

// The commands write to the streams they are given, so that they can run
// in-process too.
func TestRunInProcess(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"ls", "--help"}, strings.NewReader(""), &out, &errOut, func(string) string { return "" }); code != 0 ||
		!strings.Contains(out.String(), "redelay ls QUEUE [--state STATE]") || errOut.Len() != 0 {
		t.Fatalf("run ls --help: %d\n%s\n%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"get", "q"}, strings.NewReader(""), &out, &errOut, func(string) string { return "" }); code != 2 ||
		out.Len() != 0 || !strings.HasPrefix(errOut.String(), "redelay: wrong number of arguments for get") {
		t.Fatalf("run get q: %d\n%s\n%s", code, out.String(), errOut.String())
	}
}

// Every usage error exits 2 before anything connects: the shell of
// completion, the topic of help, the address of dashboard --listen, and
// an argument that starts with "-" (a negative duration, read as a flag),
// which gets a hint. The Redis URL is unreachable, so a command that
// connected would exit 1.
func TestUsageErrorsExit2(t *testing.T) {
	const nowhere = "redis://127.0.0.1:1/0"
	cases := []struct {
		args   []string
		stderr []string
	}{
		{[]string{"completion", "tcsh"}, []string{`unknown shell "tcsh" for "redelay completion": want bash, zsh, fish or powershell`}},
		{[]string{"help", "frobnicate"}, []string{`unknown help topic "frobnicate"`}},
		{[]string{"help", "stats", "extra"}, []string{`unknown help topic "stats extra"`}},
		{[]string{"ls", "q", "--offset", "2000000000000"}, []string{`--offset 2000000000000: want 0 to 1099511627776`}},
		{[]string{"dashboard", "--listen", "nonsense"}, []string{`--listen "nonsense": want host:port`}},
		{[]string{"dashboard", "--listen", "127.0.0.1:99999"}, []string{`--listen "127.0.0.1:99999": port 99999: want 0 to 65535`}},
		{[]string{"dashboard", "--listen", "127.0.0.1:"}, []string{`--listen "127.0.0.1:": want host:port`}},
		{[]string{"dashboard", "--listen", "bad host!:80"}, []string{`--listen "bad host!:80": host "bad host!"`}},
		{[]string{"reschedule", "q", "id", "-5m"}, []string{`unknown shorthand flag: '5' in -5m`,
			`use -- before a negative duration (redelay reschedule QUEUE ID -- -5m), or an absolute time`}},
		{[]string{"get", "q", "-42"}, []string{`unknown shorthand flag: '4' in -42`,
			`an argument that starts with "-" is read as flags: put -- before it (redelay get ... -- -42)`}},
	}
	for _, c := range cases {
		r := cli(t, with([]string{"--redis", nowhere}, c.args...)...)
		if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "redelay: ") || !strings.Contains(r.stderr, "--help' for usage.") {
			t.Errorf("redelay %q: want exit 2 and a usage error, got %v", c.args, r)
			continue
		}
		for _, s := range c.stderr {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("redelay %q: stderr does not say %q: %v", c.args, s, r)
			}
		}
	}
	// -- lets a negative duration through: to the server's refusal of a
	// past time, here to the unreachable server.
	if r := cli(t, "--redis", nowhere, "reschedule", "q", "id", "--", "-5m"); r.code != 1 || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("reschedule q id -- -5m: want exit 1 (unreachable), got %v", r)
	}
}
