package redistest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ReadCommandStats reads INFO commandstats of every master rdb talks to
// (the one server of a *redis.Client) and returns the calls and total
// microseconds of each command, by name in lower case ("evalsha",
// "client|setinfo"), summed over the masters. Commands that scripts run
// are counted under their own names.
func ReadCommandStats(tb testing.TB, rdb redis.UniversalClient) map[string]CommandStat {
	tb.Helper()
	ctx := context.Background()
	stats := map[string]CommandStat{}
	var mu sync.Mutex
	read := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for line := range strings.SplitSeq(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
			if !ok {
				continue
			}
			name, fields, _ := strings.Cut(rest, ":")
			st := stats[name]
			for field := range strings.SplitSeq(fields, ",") {
				k, v, _ := strings.Cut(field, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					st.Calls += n
				case "usec":
					st.Usec += n
				}
			}
			stats[name] = st
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.Client:
		err = read(ctx, c)
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, read)
	default:
		tb.Fatalf("redistest: ReadCommandStats(%T): unsupported client type", rdb)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return stats
}

// CommandLog is a go-redis hook (Client.AddHook) that records the name of
// every command its client sends, in lower case, those of pipelines and
// of a new connection's handshake included. It is safe for concurrent
// use.
type CommandLog struct {
	mu    sync.Mutex
	names []string
}

// Take returns the names recorded since the last Take, in the order the
// commands were sent.
func (l *CommandLog) Take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := l.names
	l.names = nil
	return names
}

func (l *CommandLog) record(cmds ...redis.Cmder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cmds {
		l.names = append(l.names, c.Name())
	}
}

// DialHook is the hook's: it records nothing.
func (l *CommandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records the command.
func (l *CommandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.record(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records the pipeline's commands.
func (l *CommandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		l.record(cmds...)
		return next(ctx, cmds)
	}
}

// ScansKeyspace reports whether the command called name (lower case, as
// CommandLog and ReadCommandStats name it) walks a database's keyspace:
// KEYS and SCAN, whose cost grows with every key of the database.
// HSCAN, SSCAN and ZSCAN walk one key the call names and are not such.
func ScansKeyspace(name string) bool { return name == "keys" || name == "scan" }

// CommandCalls is the number of calls of each command between two reads
// of ReadCommandStats, and their sum; commands not called are left out.
func CommandCalls(before, after map[string]CommandStat) (map[string]int64, int64) {
	calls := map[string]int64{}
	var sum int64
	for cmd, st := range after {
		if n := st.Calls - before[cmd].Calls; n > 0 {
			calls[cmd] = n
			sum += n
		}
	}
	return calls, sum
}
