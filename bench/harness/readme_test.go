package harness

import (
	"encoding/json"
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
	if len(lines) != 2+6 {
		t.Fatalf("%d lines, want a header, a rule and 6 rows:\n%s", len(lines), got)
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
