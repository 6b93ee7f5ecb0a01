package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/osproc"
	"github.com/redelay/redelay/internal/redistest"
)

// update makes the golden tests rewrite testdata/*.golden.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// binaryEnv names the environment variable through which TestMain tells
// the tests where the command's binary is.
const binaryEnv = "REDELAY_TEST_BINARY"

// TestMain builds the command once, then runs the tests, which run the
// binary against the Redis servers of redistest. The binary goes next to
// the test binary, in the work directory that go test removes.
func TestMain(m *testing.M) {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "finding the test binary: %v\n", err)
		os.Exit(1)
	}
	bin := filepath.Join(filepath.Dir(exe), "redelay-cli")
	// No version control stamp: a checkout owned by another user, or
	// without .git, would make the build fail for nothing the tests use.
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building the command: %v\n", err)
		os.Exit(1)
	}
	os.Setenv(binaryEnv, bin)
	redistest.Run(m)
}

// result is what one run of the command did.
type result struct {
	stdout, stderr string
	code           int
}

// String describes r for failure messages.
func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs the command with args, nothing on stdin, in the UTC time zone
// and without REDIS_URL, and returns what it did.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	return cliIn(t, "", args...)
}

// cliIn is cli with stdin as the command's standard input.
func cliIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return cliEnv(t, nil, stdin, args...)
}

// cliEnv is cliIn with env (KEY=value) added to the environment.
func cliEnv(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := command(ctx, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("running redelay %q: %v", args, err)
	}
	return r
}

// command returns the command with args, ready to start, in the UTC time
// zone and without REDIS_URL.
func command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Getenv(binaryEnv), args...)
	env := []string{"TZ=UTC"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, redisURLEnv+"=") && !strings.HasPrefix(kv, "TZ=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	osproc.DieWithParent(cmd)
	return cmd
}

// ok runs the command, fails the test unless it exits 0, and returns its
// standard output.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := cli(t, args...)
	if r.code != 0 {
		t.Fatalf("redelay %q: %v", args, r)
	}
	return r.stdout
}

// connFlags returns the connection flags for rdb's servers: --redis for
// a standalone server, --cluster with every master for a Cluster.
func connFlags(t *testing.T, rdb redis.UniversalClient) []string {
	t.Helper()
	switch c := rdb.(type) {
	case *redis.Client:
		return []string{"--redis", "redis://" + c.Options().Addr + "/0"}
	case *redis.ClusterClient:
		return []string{"--cluster", strings.Join(c.Options().Addrs, ",")}
	default:
		t.Fatalf("connFlags(%T): unsupported client", rdb)
		return nil
	}
}

// with returns flags followed by args.
func with(flags []string, args ...string) []string {
	return append(append([]string(nil), flags...), args...)
}

// goldenName returns a queue name unique to this run, of a fixed length,
// so that tables of it stay aligned the same way: prefix, "-" and eight
// hex digits.
func goldenName(prefix string) string {
	return fmt.Sprintf("%s-%08x", prefix, rand.Uint32())
}

// placeholderName is what a name from goldenName(prefix) becomes in
// golden files.
func placeholderName(prefix string) string { return prefix + "-00000000" }

// varyingTime matches a time of a table whose year is not 2099: times of
// the test run, which golden files cannot hold.
var varyingTime = regexp.MustCompile(`\b(?:20[0-8]\d|209[0-8]|2[1-9]\d\d)-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// normalise returns out with the queue name made its placeholder and the
// times of the test run made XXXX-XX-XXTXX:XX:XXZ, both of the same width.
func normalise(out, name, prefix string) string {
	out = strings.ReplaceAll(out, name, placeholderName(prefix))
	return varyingTime.ReplaceAllString(out, "XXXX-XX-XXTXX:XX:XXZ")
}

// golden compares got with testdata/file, or writes it there with
// -update.
func golden(t *testing.T, file, got string) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
