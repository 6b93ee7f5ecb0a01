package lua

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "write the scripts shipped for producers of other languages")

// clientScripts are the scripts of the offer protocol (docs/protocol.md),
// as this package composes them.
var clientScripts = map[string]string{
	"offer.lua":  compose(offerSrc),
	"remove.lua": compose(removeSrc),
}

// clientDirs hold a copy of each: the protocol's own, and each client
// package's (a package ships the files it loads).
var clientDirs = []string{
	"../../clients/protocol",
	"../../clients/python/redelay/lua",
	"../../clients/node/lua",
}

// Producers in other languages load the very scripts the Go producer runs,
// so the protocol cannot drift from it. After a change to a script or to a
// prelude definition it uses: go test ./internal/lua -run TestClientScripts -update
func TestClientScripts(t *testing.T) {
	for _, dir := range clientDirs {
		for name, src := range clientScripts {
			path := filepath.Join(dir, name)
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it: go test ./internal/lua -run TestClientScripts -update)", err)
			}
			if string(got) != src {
				t.Errorf("%s differs from the script the Go producer runs: go test ./internal/lua -run TestClientScripts -update", path)
			}
		}
	}
}
