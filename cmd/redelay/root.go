package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// app is one run of the command line: the root command's flags, bound
// when they are parsed, and what every command shares.
type app struct {
	// getenv reads the environment (os.Getenv, or a map in tests).
	getenv func(string) string
	flags  rootFlags
}

// rootFlags are the flags of the root command, which every command has.
type rootFlags struct {
	redisURL string        // --redis
	cluster  string        // --cluster
	timeout  time.Duration // --timeout
	output   string        // -o, --output
	prefix   string        // --prefix
}

// Output formats of -o.
const (
	outputTable = "table" // aligned columns, for people
	outputJSON  = "json"  // JSON, for scripts
)

// rootCommand returns the redelay command with every subcommand.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "redelay",
		Short: "Look at and steer the redelay queues of a Redis server or Cluster",
		Long: `redelay looks at and steers the redelay queues of a Redis server or Cluster:
counts by state, the items of a queue, one item in full; cancel, reschedule,
promote, requeue, purge, pause and resume; and it serves the web dashboard.

Connection: --redis takes a redis:// or rediss:// URL, with a username,
password and database number (redis://user:password@host:6379/0); without it,
the REDIS_URL environment variable, else redis://127.0.0.1:6379/0. --cluster
connects to a Redis Cluster through the given nodes instead, with the username,
password and TLS settings (not the host) of the Redis URL when one is given.
A password never appears in what redelay prints, from the userinfo or a
query parameter. --timeout bounds each command's calls to Redis, connecting
included; a Redis that does not answer within it fails the command with "no
answer from Redis within --timeout 10s".

Stored text (IDs, headers, errors, names, values) is printed in tables with
what a terminal would act on escaped as in a Go string: control characters
(\x1b, \r, \n), bidirectional overrides (\u202e) and bytes that are not
UTF-8 (\xff). -o json writes text as JSON strings; an ID that is not UTF-8
also comes as id_base64, its exact bytes.

Exit status: 0 on success, 1 when the command failed (Redis unreachable or
silent, no such queue or item, a purge not confirmed), 2 for a usage error
(a command, flag, argument or address that cannot be right). An argument that
starts with "-", such as a negative duration, is read as flags: put -- before
it.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Args:              unknownCommand,
		RunE:              func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: a.checkRootFlags,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.flags.redisURL, "redis", "", "Redis URL, redis[s]://[user:password@]host:port/db (default $"+redisURLEnv+", else "+defaultRedisURL+")")
	pf.StringVar(&a.flags.cluster, "cluster", "", "connect to a Redis Cluster through these nodes: host:port,host:port")
	pf.DurationVar(&a.flags.timeout, "timeout", 10*time.Second, "time limit of a command's calls to Redis, connecting included (of each call, for the dashboard)")
	pf.StringVarP(&a.flags.output, "output", "o", outputTable, "output format: table or json")
	pf.StringVar(&a.flags.prefix, "prefix", "redelay", "key prefix of the queues (the one their processes gave blocking.WithPrefix)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(
		[]cobra.Completion{outputTable, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		a.queuesCommand(),
		a.consumersCommand(),
		a.statsCommand(),
		a.lsCommand(),
		a.getCommand(),
		a.cancelCommand(),
		a.rescheduleCommand(),
		a.promoteCommand(),
		a.requeueCommand(),
		a.purgeCommand(),
		a.forgetCommand(),
		a.pauseCommand(),
		a.resumeCommand(),
		a.groupsCommand(),
		a.pauseGroupCommand(),
		a.resumeGroupCommand(),
		a.schedulesCommand(),
		a.runScheduleCommand(),
		a.unscheduleCommand(),
		a.importZSetCommand(),
		a.dashboardCommand(),
		a.versionCommand(),
	)
	strictHelp(root)
	strictCompletion(root)
	return root
}

// strictHelp makes `help TOPIC` a usage error for a topic that is no
// command (or has words after one): cobra's help command prints "Unknown
// help topic" and succeeds.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" {
			continue
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			found, rest, err := root.Find(args)
			if err != nil || found == nil || len(rest) > 0 {
				return usageErrorf("unknown help topic %q for %q", strings.Join(args, " "), root.Name())
			}
			return nil
		}
	}
}

// completionShells are the shells cobra writes completion scripts for.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// strictCompletion makes `completion SHELL` a usage error for a shell
// cobra has no script for: its completion command, which has no action
// of its own, prints its help and succeeds.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return usageErrorf("unknown shell %q for %q: want %s, %s, %s or %s", args[0], cmd.CommandPath(),
				completionShells[0], completionShells[1], completionShells[2], completionShells[3])
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// startsFlag matches the error of a flag parser given an argument that
// starts with "-" and a digit, which it reads as shorthand flags: the
// argument is group 1.
var startsFlag = regexp.MustCompile(`^unknown shorthand flag: '.' in (-[0-9.]\S*)$`)

// flagError is the error of a command line the flag parser refused, a
// usage error. An argument that starts with "-" and a digit is no flag
// but a negative duration or an ID: the error says how to pass it.
func flagError(cmd *cobra.Command, err error) error {
	m := startsFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return usageErrorf("%w", err)
	}
	if _, derr := time.ParseDuration(m[1]); derr == nil && cmd.Name() == "reschedule" {
		return usageErrorf("%w: use -- before a negative duration (redelay reschedule QUEUE ID -- %s), or an absolute time", err, m[1])
	}
	return usageErrorf("%w: an argument that starts with \"-\" is read as flags: put -- before it (%s ... -- %s)", err, cmd.CommandPath(), m[1])
}

// checkRootFlags refuses root flag values that no command can use.
func (a *app) checkRootFlags(*cobra.Command, []string) error {
	if a.flags.output != outputTable && a.flags.output != outputJSON {
		return usageErrorf("-o %q: want %s or %s", a.flags.output, outputTable, outputJSON)
	}
	if a.flags.timeout <= 0 {
		return usageErrorf("--timeout %v: want a positive duration such as 5s", a.flags.timeout)
	}
	if err := inspect.New(nil, inspect.WithPrefix(a.flags.prefix)).Err(); errors.Is(err, inspect.ErrInvalidQueue) {
		return usageErrorf("--prefix: %s", strings.TrimPrefix(message(err), "redelay: invalid queue: WithPrefix: "))
	}
	return nil
}

// inspector returns the inspector of the queues under --prefix.
func (a *app) inspector(rdb redis.UniversalClient) *inspect.Inspector {
	return inspect.New(rdb, inspect.WithPrefix(a.flags.prefix))
}

// json reports whether -o json was asked for.
func (a *app) json() bool { return a.flags.output == outputJSON }

// unknownCommand refuses arguments to the root command: they are
// commands that do not exist.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageErrorf("%s", msg)
}

// exactArgs accepts exactly the arguments named, as in "QUEUE ID".
func exactArgs(names ...string) cobra.PositionalArgs {
	return rangeArgs(len(names), names...)
}

// rangeArgs accepts at least min of the arguments named, and at most all
// of them.
func rangeArgs(min int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && len(args) <= len(names) {
			return nil
		}
		want := fmt.Sprintf("%d", min)
		if min != len(names) {
			want = fmt.Sprintf("%d to %d", min, len(names))
		}
		return usageErrorf("wrong number of arguments for %s: want %s (%s), got %d",
			cmd.Name(), want, strings.Join(names, " "), len(args))
	}
}

// action returns a cobra RunE that runs f and marks its error with the
// exit status it causes.
func action(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return failure(f(cmd, args))
	}
}

// withInspector runs f with an Inspector on a client of the connection
// flags and a context bounded by --timeout, then closes the client. When
// the call fails to reach Redis, the error names where it went (without
// the password).
func (a *app) withInspector(cmd *cobra.Command, f func(ctx context.Context, in *inspect.Inspector) error) error {
	return a.withConn(cmd, func(ctx context.Context, _ *conn, in *inspect.Inspector) error { return f(ctx, in) })
}

// withConn is withInspector for a command that also calls Redis itself,
// through c.
func (a *app) withConn(cmd *cobra.Command, f func(ctx context.Context, c *conn, in *inspect.Inspector) error) error {
	c, err := a.connect(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), a.flags.timeout)
	defer cancel()
	return c.wrap(f(ctx, c, a.inspector(c.rdb)), a.flags.timeout.String())
}

// completeQueue completes a command's first argument with the names of
// the queues on the Redis of the connection flags.
func (a *app) completeQueue(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
		var err error
		names, err = in.Queues(ctx)
		return err
	})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
