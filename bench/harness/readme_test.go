package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The README table is built from a run's results: the committed full run
// gives a row per figure with the best of each in bold.
func TestReadmeTableFromResults(t *testing.T) {
	js, err := os.ReadFile("../results/full/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatal(err)
	}
	got := ReadmeTable(&res)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 2+7 {
		t.Fatalf("%d lines, want a header, a rule and 7 rows:\n%s", len(lines), got)
	}
	for _, l := range lines[2:] {
		if strings.Count(l, "**") != 2 {
			t.Errorf("row without exactly one best cell: %s", l)
		}
	}
	t.Log("\n" + got)
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{999: "999", 70077: "70,100", 137325: "137,000", 1234567: "1,230,000", 42968: "43,000"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestReadmeQuotesTheCommittedRun: the README shows the committed full
// run's table as the harness wrote it, and its lateness claim quotes that
// run's own figures for redelay.
func TestReadmeQuotesTheCommittedRun(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile("../results/full/readme-table.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), strings.TrimSpace(string(table))) {
		t.Fatal("README.md does not hold bench/results/full/readme-table.md as written")
	}
	var late string
	for _, l := range strings.Split(string(table), "\n") {
		if strings.HasPrefix(l, "| lateness,") {
			late = strings.Split(l, "|")[2] // redelay's cell: "p50 / p99 ms [Consume's]"
		}
	}
	var p50, p99 string
	if _, err := fmt.Sscanf(strings.TrimSpace(late), "%s / %s ms", &p50, &p99); err != nil {
		t.Fatalf("lateness cell %q: %v", late, err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	for _, want := range []string{"median of " + p50 + " ms", "p99 of " + p99 + " ms"} {
		if !strings.Contains(text, want) {
			t.Errorf("README.md does not quote the committed run's lateness: no %q", want)
		}
	}
}
