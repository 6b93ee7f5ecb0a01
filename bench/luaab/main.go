// Command luaab measures the server time per call of the hot scripts of two
// revisions (offer, pop, receive, ack), as composed by each: the figure
// scripts/ab-lua.sh reports. It loads each revision's scripts into one
// redis-server and calls them in turn, in blocks of -size pipelined calls,
// the two revisions alternating which goes first, and reads each block's
// EVALSHA time from INFO commandstats (reset before each block). Both
// revisions work on the same keys, which hold what the calls need (ready
// items to pop, leases to ack). For each script it prints the median of
// the per-block ratios B/A (above 1: B is slower) and how many blocks B was
// slower in.
//
//	luaab -addr 127.0.0.1:6379 -blocks 100 -size 200 dirA dirB
//
// Each directory holds offer.lua, pop.lua, receive.lua and ack.lua as
// composed (internal/lua's compose): scripts/ab-lua.sh writes them. The
// server should be one nothing else uses: the program writes keys of the
// queue "luaab" and resets the server's statistics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// env is the envelope the calls offer and pop: version 1, 81 bytes.
var env = "\x01" + strings.Repeat("x", 80)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "redis-server to use (its keys of queue luaab are overwritten)")
	blocks := flag.Int("blocks", 100, "blocks of calls per script and revision")
	size := flag.Int("size", 200, "calls per block")
	modeB := flag.String("mode-b", "d", `offer.lua mode of B's delayed offer: "d", or "D" (a generated ID, which a revision that knows the mode does not look up)`)
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: luaab [-addr host:port] [-blocks n] [-size n] [-mode-b d|D] dirA dirB")
		os.Exit(2)
	}
	if err := run(context.Background(), *addr, *blocks, *size, *modeB, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "luaab:", err)
		os.Exit(1)
	}
}

// side is one revision's scripts.
type side struct {
	offer, pop, receive, ack *redis.Script
}

// metrics are the measured calls, in report order: "offer" an Offer of
// one item ready now, "offer-delayed" one due in an hour.
var metrics = []string{"offer", "offer-delayed", "pop", "receive", "ack"}

func run(ctx context.Context, addr string, blocks, size int, modeB string, dirs []string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	sides := make([]side, len(dirs))
	for i, d := range dirs {
		var err error
		load := func(name string) *redis.Script {
			b, e := os.ReadFile(filepath.Join(d, name+".lua"))
			if e != nil {
				err = e
				return nil
			}
			s := redis.NewScript(string(b))
			if e := s.Load(ctx, rdb).Err(); e != nil {
				err = fmt.Errorf("%s/%s.lua: %w", d, name, e)
			}
			return s
		}
		sides[i] = side{load("offer"), load("pop"), load("receive"), load("ack")}
		if err != nil {
			return err
		}
	}
	const q = "redelay:{luaab}:"
	if err := rdb.Del(ctx, q+"ready", q+"delayed", q+"items", q+"leases", q+"inflight", q+"meta", q+"history").Err(); err != nil {
		return err
	}
	us := map[string][][]float64{}
	for _, m := range metrics {
		us[m] = make([][]float64, len(dirs))
	}
	nonce := make([]int64, len(dirs))
	// block runs size calls of one script and records its µs per call.
	block := func(metric string, i int, call func(p redis.Pipeliner, j int)) error {
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
		p := rdb.Pipeline()
		for j := range size {
			call(p, j)
		}
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("%s of %s: %w", metric, dirs[i], err)
		}
		v, err := evalshaUsec(ctx, rdb)
		us[metric][i] = append(us[metric][i], v)
		return err
	}
	fill := make([]any, size)
	for i := range fill {
		fill[i] = env
	}
	for b := range blocks {
		for k := range dirs {
			i := (k + b) % len(dirs) // which side goes first alternates
			s, lane := sides[i], q+"lane:"+strconv.Itoa(i)
			mode := "d"
			if i == 1 {
				mode = modeB
			}
			offerKeys := []string{q + "delayed", q + "items", q + "seq", q + "ready", q + "retry", lane, q + "prio", q + "meta"}
			steps := []struct {
				metric string
				call   func(p redis.Pipeliner, j int)
			}{
				{"offer", func(p redis.Pipeliner, j int) {
					nonce[i]++
					s.offer.EvalSha(ctx, p, offerKeys, q+"wake", strconv.FormatInt(nonce[i], 36), 60000, 0, 0, 0, "id", env, "r", 0)
				}},
				{"offer-delayed", func(p redis.Pipeliner, j int) {
					nonce[i]++
					s.offer.EvalSha(ctx, p, offerKeys, q+"wake", strconv.FormatInt(nonce[i], 36), 60000, 0, 0, 0,
						fmt.Sprintf("d%d-%d-%d", b, i, j), env, mode, 3600000000)
				}},
				{"pop", func(p redis.Pipeliner, j int) {
					s.pop.EvalSha(ctx, p, []string{q + "ready", q + "prio", q + "claimed", q + "meta", q + "history"}, 1, "", 1)
				}},
				{"receive", func(p redis.Pipeliner, j int) {
					s.receive.EvalSha(ctx, p, []string{q + "ready", q + "leases", q + "inflight", q + "claimed", q + "dead:ready", q + "meta", q + "prio", q + "rate"},
						30000, 1, fmt.Sprintf("t%d-%d-%d-", b, i, j), "", 0, 0, 0, 1, 0, 0, 0)
				}},
				{"ack", func(p redis.Pipeliner, j int) {
					s.ack.EvalSha(ctx, p, []string{q + "leases", q + "inflight", q + "meta", q + "history"}, fmt.Sprintf("t%d-%d-%d-0", b, i, j))
				}},
			}
			for _, st := range steps {
				if st.metric == "pop" || st.metric == "receive" {
					// What the offers of this block made ready, and as much
					// again: every pop and receive finds an item.
					if err := rdb.LPush(ctx, q+"ready", fill...).Err(); err != nil {
						return err
					}
				}
				if err := block(st.metric, i, st.call); err != nil {
					return err
				}
			}
		}
	}
	if n, err := rdb.HLen(ctx, q+"inflight").Result(); err != nil || n != 0 {
		return fmt.Errorf("%d leases left after the acks (%v): the calls did not do what they should", n, err)
	}
	for _, m := range metrics {
		a, b := us[m][0], us[m][1]
		ratios := make([]float64, len(a))
		slower := 0
		for k := range a {
			ratios[k] = b[k] / a[k]
			if ratios[k] > 1 {
				slower++
			}
		}
		fmt.Printf("%-14s A %7.2f µs  B %7.2f µs  B/A %.3f  B slower in %d/%d blocks\n", m, median(a), median(b), median(ratios), slower, len(ratios))
	}
	return nil
}

// evalshaUsec reads the server's µs per EVALSHA call since its statistics
// were reset.
func evalshaUsec(ctx context.Context, rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		var usec, calls float64
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "usec":
				usec, err = strconv.ParseFloat(v, 64)
			case "calls":
				calls, err = strconv.ParseFloat(v, 64)
			}
			if err != nil {
				return 0, fmt.Errorf("INFO commandstats: %s: %w", line, err)
			}
		}
		if calls == 0 {
			return 0, errors.New("INFO commandstats: no evalsha call")
		}
		return usec / calls, nil
	}
	return 0, errors.New("INFO commandstats has no evalsha line")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
