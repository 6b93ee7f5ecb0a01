package store

import "testing"

// The lowest version of a Cluster's masters is found by number, part by
// part: as strings, "7.10.0" < "7.2.4".
func TestOlderVersion(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"7.2.4", "7.10.0", true},
		{"7.10.0", "7.2.4", false},
		{"6.2.14", "7.0.15", true},
		{"7.0.15", "7.0.15", false},
		{"7.0", "7.0.1", true},
		{"7.0.1", "7.0", false},
		{"", "7.0.0", true},
		{"7.4.0-rc1", "7.4.1", true},
	} {
		if got := olderVersion(c.a, c.b); got != c.want {
			t.Errorf("olderVersion(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
