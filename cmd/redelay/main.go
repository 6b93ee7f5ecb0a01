// Command redelay looks at and steers the redelay queues of a Redis server
// or Cluster from a shell: counts by state, the items of a state, one item
// in full; cancel, reschedule, promote, requeue, purge, pause and resume;
// and it serves the web dashboard.
//
//	redelay stats
//	redelay ls orders --state dead
//	redelay ls orders
//	redelay requeue orders --all
//	redelay --cluster 10.0.0.1:6379,10.0.0.2:6379 stats orders --watch
//	redelay dashboard --demo
//
// Run `redelay --help`, or `redelay COMMAND --help`, for every flag, and
// `redelay version` for the versions it was built from. Tables are for
// people; `-o json` prints the same for scripts. The exit status is 0 on
// success, 1 when the command failed (Redis unreachable or silent within
// --timeout, no such queue or item, a purge not confirmed) and 2 for a
// usage error.
//
// It is built on github.com/spf13/cobra, the most used Go CLI framework:
// subcommands with their own flags, --help on every command and generated
// shell completion (`redelay completion bash|zsh|fish|powershell`).
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/redis/go-redis/v9"
)

// main runs the command line and exits with its status. go-redis's own
// log is silenced: it repeats on stderr, once per retry, the errors that
// the command reports once.
func main() {
	redis.SetLogger(silentLog{})
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// run runs the command line args (without the program name) with the
// given standard streams and environment, and returns the exit status:
// 0, 1 for a failure, 2 for a usage error. Every error is printed on
// stderr as one line prefixed "redelay: ", with any Redis password
// replaced by ***.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{getenv: getenv}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(context.Background())
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	fmt.Fprintf(stderr, "redelay: %s\n", safeLines(a.redact(message(err))))
	if code == exitUsage && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}
