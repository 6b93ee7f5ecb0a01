package harness

import (
	"fmt"
	"math"
	"strings"
)

// readmeColumns are the README table's columns: the contestant(s) whose
// figures fill each one. redelay's column shows Take's drain and lateness
// (a Receive+Ack loop's and Consume's in brackets).
var readmeColumns = []struct {
	title string
	names []string
}{
	{"redelay", []string{"redelay-take", "redelay-receive", "redelay-consume"}},
	{"asynq 0.26", []string{"asynq"}},
	{"BullMQ 6.7", []string{"bullmq"}},
	{"Redisson's algorithm", []string{"redisson-algo"}},
	{"ZSET polled each second", []string{"seed-poll"}},
}

// ReadmeTable renders the README's comparison table from a run: one row
// per headline figure, the best of each row in bold. Cells of contestants
// or workloads the run left out are "–".
func ReadmeTable(res *Results) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("|")
	for _, c := range readmeColumns {
		p(" | %s", c.title)
	}
	p(" |\n| ---")
	for range readmeColumns {
		p(" | ---")
	}
	p(" |\n")

	// row writes one row: cell returns a column's text and the value that
	// ranks it (NaN: not ranked); lower says whether less is better.
	row := func(title string, lower bool, cell func(names []string) (string, float64)) {
		texts := make([]string, len(readmeColumns))
		vals := make([]float64, len(readmeColumns))
		best := math.NaN()
		for i, c := range readmeColumns {
			texts[i], vals[i] = cell(c.names)
			v := vals[i]
			if math.IsNaN(v) {
				continue
			}
			if math.IsNaN(best) || (lower && v < best) || (!lower && v > best) {
				best = v
			}
		}
		p("| %s", title)
		for i, t := range texts {
			if !math.IsNaN(best) && vals[i] == best {
				t = "**" + t + "**"
			}
			p(" | %s", t)
		}
		p(" |\n")
	}
	nan := math.NaN()
	burst := func(name string) *DeliveryResult {
		for i := range res.Burst {
			if res.Burst[i].Contestant == name && res.Burst[i].DrainRate > 0 {
				return &res.Burst[i]
			}
		}
		return nil
	}
	trickle := func(name string) *DeliveryResult {
		for i := range res.Trickle {
			if res.Trickle[i].Contestant == name && res.Trickle[i].Lost == 0 {
				return &res.Trickle[i]
			}
		}
		return nil
	}
	offer := func(name string, batch bool, producers int) float64 {
		for _, o := range res.Offer {
			if o.Contestant == name && o.Batch == batch && (batch || o.Producers == producers) && o.Errors == 0 {
				return o.PerSec
			}
		}
		return 0
	}
	memory := func(name string, padded bool) float64 {
		for _, m := range res.Memory {
			if m.Contestant == name && (m.ValueBytes > 0) == padded && m.Errors == 0 {
				return m.BytesPer
			}
		}
		return 0
	}
	largest := 0
	for _, bl := range res.Backlog {
		largest = max(largest, bl.Backlog)
	}
	cancel := func(name string) (float64, string) {
		for _, bl := range res.Backlog {
			if bl.Contestant == name && bl.Backlog == largest {
				if bl.CancelSamples == 0 || bl.CancelMeanUs <= 0 {
					return 0, "failed (" + firstWords(bl.Note) + ")"
				}
				return bl.CancelMeanUs, ""
			}
		}
		return 0, ""
	}
	bracket := func(names []string, f func(string) (string, float64)) (string, float64) {
		text, v := f(names[0])
		var more []string
		for _, n := range names[1:] {
			if t, _ := f(n); t != "–" {
				more = append(more, t)
			}
		}
		if len(more) > 0 {
			text += " [" + strings.Join(more, " · ") + "]"
		}
		return text, v
	}

	row(fmt.Sprintf("drain of %s items due at once (`Take` [`Receive`+`Ack` · `Consume`])", thousands(float64(res.Config.BurstN))), false,
		func(names []string) (string, float64) {
			return bracket(names, func(n string) (string, float64) {
				if d := burst(n); d != nil {
					return thousands(d.DrainRate) + "/s", d.DrainRate
				}
				return "–", nan
			})
		})
	row(fmt.Sprintf("lateness, %s items spread over %v: p50 / p99", thousands(float64(res.Config.TrickleN)), res.Config.TrickleSpan), true,
		func(names []string) (string, float64) {
			return bracket(names, func(n string) (string, float64) {
				if d := trickle(n); d != nil {
					return ms(d.Lateness.P50) + " / " + ms(d.Lateness.P99) + " ms", d.Lateness.P99
				}
				return "–", nan
			})
		})
	row("offers/s, 1 producer, each offer under a context with a deadline", false,
		func(names []string) (string, float64) {
			if v := offer(names[0], false, 1); v > 0 {
				return thousands(v), v
			}
			return "–", nan
		})
	row(fmt.Sprintf("offers/s, %d producers (batch API)", res.Config.Producers), false,
		func(names []string) (string, float64) {
			v := offer(names[0], false, res.Config.Producers)
			if v == 0 {
				return "–", nan
			}
			t := thousands(v)
			if bv := offer(names[0], true, 0); bv > 0 {
				t += " (" + thousands(bv) + ")"
			}
			return t, v
		})
	for _, padded := range []bool{false, true} {
		title := "Redis bytes per pending item, the ID alone"
		if padded {
			title = fmt.Sprintf("Redis bytes per pending item, %d-byte value", res.Config.ValueBytes)
		}
		row(title, true, func(names []string) (string, float64) {
			if v := memory(names[0], padded); v > 0 {
				return thousands(v), v
			}
			return "–", nan
		})
	}
	if largest > 0 {
		row(fmt.Sprintf("cancel by ID with %s pending", thousands(float64(largest))), true,
			func(names []string) (string, float64) {
				v, failed := cancel(names[0])
				switch {
				case failed != "":
					return failed, nan
				case v == 0:
					return "–", nan
				}
				return micros(v), v
			})
	}
	return b.String()
}

// thousands formats v rounded to 3 significant digits, with commas.
func thousands(v float64) string {
	if v < 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	mag := math.Pow(10, math.Floor(math.Log10(v))-2)
	r := int64(math.Round(v/mag) * mag)
	s := fmt.Sprint(r)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// micros formats a duration in µs, in ms or s when long.
func micros(v float64) string {
	switch {
	case v >= 1e6:
		return num(v/1e6) + " s"
	case v >= 1e3:
		return num(v/1e3) + " ms"
	}
	return num(v) + " µs"
}

// ms formats a lateness in ms: two decimals below 10, whole above.
func ms(v float64) string {
	if v >= 10 {
		return thousands(v)
	}
	return fmt.Sprintf("%.2f", v)
}

// firstWords shortens a note for a table cell.
func firstWords(s string) string {
	if i := strings.IndexAny(s, ":;("); i > 0 {
		s = s[:i]
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strings.TrimSpace(s)
}
