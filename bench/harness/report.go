package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Write writes results.json, results.md and readme-table.md (the README's
// comparison table, ReadmeTable) to dir.
func Write(dir string, res *Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(Markdown(res)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "readme-table.md"), []byte(ReadmeTable(res)), 0o644); err != nil {
		return err
	}
	// Charts are a nice-to-have: a failure is reported, not fatal.
	if err := Charts(dir, res); err != nil {
		return fmt.Errorf("charts (results.json and results.md written): %w", err)
	}
	return nil
}

func (res *Results) ceilingOf(test string) float64 {
	for _, c := range res.Ceiling {
		if strings.EqualFold(c.Test, test) {
			return c.PerSec
		}
	}
	return 0
}

func num(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratio(v, ref float64) string {
	if v == 0 || ref == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v/ref)
}

// Markdown renders the results as tables, one per workload.
func Markdown(res *Results) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	cfg := res.Config
	p("# Side-by-side delayed-queue benchmark (%s run)\n\n", cfg.Mode)
	p("%s · %s · Redis %s · %d CPUs · wall time %.0f s. Every contestant gets a fresh `redis-server` (no persistence) per workload, on loopback, on the same machine as the clients.\n\n",
		res.Date, res.GoVersion, res.RedisVersion, res.CPUs, res.WallSeconds)
	p("## Contestants\n\n| contestant | settings | batch offer | cancel by id |\n| --- | --- | --- | --- |\n")
	for _, c := range res.Contestants {
		p("| %s | %s | %s | %s |\n", c.Name, c.Settings, yes(c.Batch), yes(c.Cancel))
	}

	zadd := res.ceilingOf("ZADD")
	p("\n## Offer throughput\n\n%d items due in 24 h (nothing moves). Memory (1-producer run, the id alone as the value): `used_memory` less client buffers, after − before, ÷ items; see also [Memory per pending item](#memory-per-pending-item). Redis CPU: the server's user + system CPU time during the offers ÷ items (INFO cpu), µs, for 1 and %[2]d producers. Client CPU: the same for the client side (this harness's process, where every Go contestant runs, plus BullMQ's Node.js process; 10 ms ticks for the latter). \"vs best\" and \"vs ZADD ceiling\" compare the %[2]d-producer rate.\n\n", cfg.OfferN, cfg.Producers)
	p("| contestant | 1 producer items/s | %d producers items/s | batch items/s | Redis bytes / pending item | Redis CPU µs / item, 1 · %[1]d producers | client CPU µs / item, 1 · %[1]d producers | vs best | vs ZADD ceiling | notes |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n", cfg.Producers)
	best := 0.0
	for _, o := range res.Offer {
		if o.Producers == cfg.Producers && !o.Batch {
			best = max(best, o.PerSec)
		}
	}
	for _, c := range res.Contestants {
		var one, many, batch float64
		var mem, cpuOne, cpuMany, clientOne, clientMany float64
		var notes []string
		for _, o := range res.Offer {
			if o.Contestant != c.Name {
				continue
			}
			switch {
			case o.Batch:
				batch = o.PerSec
			case o.Producers == 1:
				one, mem, cpuOne, clientOne = o.PerSec, o.BytesPer, o.CPUPer, o.ClientCPUPer
			default:
				many, cpuMany, clientMany = o.PerSec, o.CPUPer, o.ClientCPUPer
			}
			if o.Errors > 0 {
				notes = append(notes, fmt.Sprintf("%d errors", o.Errors))
			}
			if o.Note != "" && !o.Batch {
				notes = append(notes, o.Note)
			}
		}
		p("| %s | %s | %s | %s | %s | %s · %s | %s · %s | %s | %s | %s |\n", c.Name, num(one), num(many), num(batch), num(mem), num(cpuOne), num(cpuMany),
			num(clientOne), num(clientMany), ratio(many, best), ratio(many, zadd), strings.Join(notes, "; "))
	}

	memoryTable(&b, res)

	rpop := res.ceilingOf("RPOP")
	p("\n## Burst drain\n\n%d items all due at the same instant, offered by %d producers before it; consumers start when offering ends. Drain time: due → last arrival. Lateness: arrival − due, ms. Lost: not delivered within the workload's time bound.\n\n", cfg.BurstN, cfg.Producers)
	p("| contestant | offer s | drain s | drain items/s | vs best | vs RPOP ceiling | p50 ms | p99 ms | max ms | lost | dup | notes |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	best = 0
	for _, d := range res.Burst {
		best = max(best, d.DrainRate)
	}
	for _, d := range res.Burst {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n", d.Contestant, num(d.OfferSeconds), num(d.DrainSeconds), num(d.DrainRate),
			ratio(d.DrainRate, best), ratio(d.DrainRate, rpop), num(d.Lateness.P50), num(d.Lateness.P99), num(d.Lateness.Max),
			d.Lost, d.Dup, notes(d))
	}

	p("\n## Trickle\n\n%d items due uniformly over %v; consumers running throughout. Lateness: arrival − due, ms. Lost: not delivered within the workload's time bound.\n\n", cfg.TrickleN, cfg.TrickleSpan)
	p("| contestant | p50 ms | p99 ms | max ms | min ms | lost | dup | notes |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, d := range res.Trickle {
		p("| %s | %s | %s | %s | %s | %d | %d | %s |\n", d.Contestant, num(d.Lateness.P50), num(d.Lateness.P99),
			num(d.Lateness.Max), fmt.Sprintf("%.2f", d.Lateness.Min), d.Lost, d.Dup, notes(d))
	}

	p("\n## Cost against the backlog\n\nWith the backlog pending (due in 24 h): mean latency of %d sequential single offers; drain of %d items due together among the backlog (due → last arrival, and items ÷ that time: for a poller this mostly measures where the due time fell between two polls); mean time of up to %d sequential cancels of distinct random pending ids (15 s at most; one cancel call is not interruptible). Lost: of the items due together, those not delivered within the time bound.\n\n",
		cfg.LatencyM, cfg.TransferK, cfg.CancelM)
	p("| contestant | backlog | fill s | offer µs | transfer: due → last ms | transfer items/s | lost | cancel µs | cancels timed | notes |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, k := range res.Backlog {
		cancel := "n/a"
		if k.CancelMeanUs >= 0 {
			cancel = num(k.CancelMeanUs)
		}
		p("| %s | %d | %s | %s | %s | %s | %d | %s | %d | %s |\n", k.Contestant, k.Backlog, num(k.FillSeconds), num(k.OfferMeanUs),
			num(k.TransferMs), num(k.TransferRate), k.TransferLost, cancel, k.CancelSamples, k.Note)
	}

	p("\n## Ceiling\n\n`redis-benchmark -P 64 -n %d -q -t zadd,lpush,rpop` against a fresh server: the raw command rate, pipelined 64 deep.\n\n| command | requests/s |\n| --- | --- |\n", cfg.CeilingN)
	for _, c := range res.Ceiling {
		p("| %s | %.0f |\n", c.Test, c.PerSec)
	}
	if len(res.Problems) > 0 {
		p("\n## Problems\n\nThe run failed: a contestant did not run a workload cleanly.\n\n")
		for _, s := range res.Problems {
			p("- %s\n", s)
		}
	}
	return b.String()
}

// memoryTable renders Redis bytes per pending item, id alone against a
// padded value, one row per contestant.
func memoryTable(b *strings.Builder, res *Results) {
	cfg := res.Config
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("\n## Memory per pending item\n\n")
	p("Items due in 24 h (nothing moves); Redis `used_memory` less client buffers (`mem_clients_normal`), after − before offering, ÷ items. ")
	p("Tiny value: the id alone, from the 1-producer offer run (%d items). ", cfg.OfferN)
	p("%d-byte value: %d items offered by %d producers, each value carrying a %d-byte padding string beside the id, stored as each contestant's users store a payload: ",
		cfg.ValueBytes, cfg.MemoryN, cfg.Producers, cfg.ValueBytes)
	p("redelay, a `Pad` field of the msgpack-encoded value; asynq, the task payload `\"<id> <padding>\"`; bullmq, job data `{id, pad}`; ")
	p("redisson-algo, a `Pad` field of the JSON value (stored twice, in the timeout ZSET and the order list); seed-poll, the ZSET member `\"<id>:<padding>\"`. ")
	p("Only this measurement pads; every other workload offers the id alone.\n\n")
	p("| contestant | Redis bytes / pending item, tiny value | Redis bytes / pending item, %d-byte value | added by the padding | notes |\n| --- | --- | --- | --- | --- |\n", cfg.ValueBytes)
	for _, c := range res.Contestants {
		var tiny, padded float64
		var notes []string
		for _, m := range res.Memory {
			if m.Contestant != c.Name {
				continue
			}
			if m.ValueBytes == 0 {
				tiny = m.BytesPer
			} else {
				padded = m.BytesPer
			}
			if m.Errors > 0 {
				notes = append(notes, fmt.Sprintf("%d errors", m.Errors))
			}
			if m.Note != "" {
				notes = append(notes, m.Note)
			}
		}
		added := "–"
		if tiny != 0 && padded != 0 {
			added = fmt.Sprintf("%+.0f", math.Round(padded)-math.Round(tiny))
		}
		p("| %s | %s | %s | %s | %s |\n", c.Name, num(tiny), num(padded), added, strings.Join(notes, "; "))
	}
}

func notes(d DeliveryResult) string {
	var n []string
	if d.Errors > 0 {
		n = append(n, fmt.Sprintf("%d offer errors", d.Errors))
	}
	if d.Note != "" {
		n = append(n, d.Note)
	}
	return strings.Join(n, "; ")
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
