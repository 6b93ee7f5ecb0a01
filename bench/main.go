// Command bench runs the side-by-side benchmark of redelay against its peers
// and the usual polling recipe, each against its own fresh redis-server, and
// writes results.json, results.md and charts to -out (nothing else).
//
// It exits non-zero, after writing the results and listing why, when any
// contestant failed to run a workload cleanly: a setup or workload error, a
// failed offer or cancel, a lost or duplicated item, a time bound hit. It
// asserts nothing about speed, so a small run doubles as a smoke test (the
// test suite runs it; its figures rank no one):
//
//	go run . -smoke -out "$(mktemp -d)"
//
//	go run . -quick -out results
//	go run . -full -only redelay-take,seed-poll
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/redelay/redelay/bench/harness"
)

func main() {
	quick := flag.Bool("quick", true, "small sizes: under 3 minutes on 2 cores")
	full := flag.Bool("full", false, "big sizes (overrides -quick): backlogs up to 1M, under 30 minutes")
	smoke := flag.Bool("smoke", false, "tiny sizes (overrides -quick and -full): checks every workload runs cleanly in about a minute; its figures rank no one")
	out := flag.String("out", "results", "output directory")
	only := flag.String("only", "", "comma-separated contestant names (default: all registered)")
	workloads := flag.String("workloads", "", "comma-separated workloads (default: all): "+strings.Join(harness.Workloads(), ", "))
	server := flag.String("redis-server", "redis-server", "redis-server binary")
	benchmark := flag.String("redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	flag.Parse()

	cfg := harness.Quick()
	switch {
	case *smoke:
		cfg = harness.Smoke()
	case *full || !*quick:
		cfg = harness.Full()
	}
	cfg.RedisServer, cfg.RedisBenchmark, cfg.Log = *server, *benchmark, os.Stderr
	if *only != "" {
		for n := range strings.SplitSeq(*only, ",") {
			if n = strings.TrimSpace(n); n != "" {
				cfg.Only = append(cfg.Only, n)
			}
		}
	}
	for w := range strings.SplitSeq(*workloads, ",") {
		if w = strings.TrimSpace(w); w != "" {
			cfg.Workloads = append(cfg.Workloads, w)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := harness.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	failed := false
	if err := harness.Write(*out, res); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		failed = true
	} else {
		fmt.Fprintf(os.Stderr, "wrote %s/results.json and %s/results.md (%.0f s)\n", *out, *out, res.WallSeconds)
	}
	if len(res.Problems) > 0 {
		fmt.Fprintf(os.Stderr, "bench: FAILED: %d problem(s):\n", len(res.Problems))
		for _, p := range res.Problems {
			fmt.Fprintln(os.Stderr, "  -", p)
		}
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}
