package main

import (
	"runtime"
	"strings"
	"testing"
)

// version prints the tool's version, the library's and Go's, from the
// build information, without connecting to Redis; -o json too. The
// tests' build has no version control stamp, and takes the library from
// the checkout (the replace of go.work).
func TestVersion(t *testing.T) {
	const nowhere = "redis://127.0.0.1:1/0"
	out := ok(t, "--redis", nowhere, "version")
	for _, want := range []string{
		"VERSION   (devel)\n",
		"LIBRARY   github.com/redelay/redelay (devel), replaced by ../..\n",
		"GO        " + runtime.Version() + "\n",
		"PLATFORM  " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("version does not say %q:\n%s", want, out)
		}
	}
	var v map[string]any
	decode(t, ok(t, "--redis", nowhere, "version", "-o", "json"), &v)
	want := map[string]any{
		"version": "(devel)", "library": "github.com/redelay/redelay", "library_version": "(devel)",
		"library_replace": "../..", "go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH,
	}
	if !equalJSON(v, want) {
		t.Errorf("version -o json = %v, want %v", v, want)
	}
	if r := cli(t, "version", "extra"); r.code != 2 {
		t.Errorf("version extra: want exit 2, got %v", r)
	}
}
