package modpin

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// setup opens the checkout and reads the tool's module as committed at
// HEAD: the library version its go.mod requires, resolved to the commit
// it names, which must be on HEAD's history.
type setup struct {
	repo       *Repo
	head, pin  Commit
	lib, tool  Module
	gosum      []byte
	libVersion string
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	repo, err := Open(".")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	// The library is zipped from the pinned commit and its pseudo-version
	// is checked against the tags below it: both need the history, which
	// a shallow clone (a CI checkout's default depth of 1) lacks.
	if repo.Shallow() {
		t.Fatalf("%s is a shallow clone: this test zips the library from the commit cmd/redelay/go.mod pins, which needs the history; fetch it (git fetch --unshallow, or a CI checkout with full depth)", repo.Root)
	}
	s := &setup{repo: repo}
	if s.head, err = repo.Commit("HEAD"); err != nil {
		t.Fatal(err)
	}
	gomod, err := repo.File(s.head, ToolDir+"/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if s.gosum, err = repo.File(s.head, ToolDir+"/go.sum"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		if now, err := os.ReadFile(filepath.Join(repo.Root, ToolDir, name)); err == nil {
			if was, _ := repo.File(s.head, ToolDir+"/"+name); !bytes.Equal(now, was) {
				t.Logf("note: %s/%s has uncommitted changes; this test checks the module as committed at HEAD (%s)", ToolDir, name, s.head.Short())
			}
		}
	}
	if s.libVersion, err = Requirement(gomod); err != nil {
		t.Fatalf("%s/go.mod at HEAD: %v", ToolDir, err)
	}
	if s.pin, err = repo.Pinned(s.libVersion); err != nil {
		t.Fatalf("%s/go.mod requires %s %s: %v (is the whole history fetched? else run scripts/pin-library.sh)", ToolDir, LibraryPath, s.libVersion, err)
	}
	on, err := repo.IsAncestor(s.pin, s.head)
	if err != nil {
		t.Fatal(err)
	}
	if !on {
		t.Fatalf("%s/go.mod pins commit %s, which is not on HEAD's history: users could not fetch it from main; run scripts/pin-library.sh", ToolDir, s.pin.Short())
	}
	if s.lib, err = repo.Library(s.pin); err != nil {
		t.Fatal(err)
	}
	if s.tool, err = repo.Tool(s.head); err != nil {
		t.Fatal(err)
	}
	return s
}

// go.sum's lines for the pinned library are the hashes of the module
// zipped from that commit and of its go.mod: what the go command checks
// the downloaded library against.
func (s *setup) checkSums(t *testing.T) {
	t.Helper()
	zipHash, err := s.lib.ZipHash()
	if err != nil {
		t.Fatal(err)
	}
	modHash, err := s.lib.ModHash()
	if err != nil {
		t.Fatal(err)
	}
	gotZip, gotMod := Sums(s.gosum, LibraryPath, s.libVersion)
	if gotZip != zipHash {
		t.Fatalf("%s/go.sum at HEAD records %q for %s %s; the module zipped from commit %s hashes to %s: run scripts/pin-library.sh", ToolDir, gotZip, LibraryPath, s.libVersion, s.pin.Short(), zipHash)
	}
	if gotMod != modHash {
		t.Fatalf("%s/go.sum at HEAD records %q for %s %s/go.mod; that commit's go.mod hashes to %s: run scripts/pin-library.sh", ToolDir, gotMod, LibraryPath, s.libVersion, modHash)
	}
}

// installLine is the README's install line for the tool.
var installLine = regexp.MustCompile("(?m)^go install (" + regexp.QuoteMeta(ToolPath) + ")@(\\S+)$")

// TestInstall does what a user does: it installs the tool with the
// README's line, once at the version of HEAD and once @latest, from a
// module proxy directory that serves the library at the version the
// tool's go.mod pins, zipped from that commit, and the tool zipped from
// HEAD, outside any workspace and with an empty module cache; then it
// asks the installed tool which library it was built with.
func TestInstall(t *testing.T) {
	s := newSetup(t)
	s.checkSums(t)

	readme, err := s.repo.File(s.head, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := installLine.FindSubmatch(readme)
	if line == nil {
		t.Fatalf("README.md has no line `go install %s@latest`", ToolPath)
	}
	if string(line[2]) != "latest" {
		t.Fatalf("README.md installs %s@%s; users should get @latest", ToolPath, line[2])
	}

	tmp := t.TempDir()
	proxyDir := filepath.Join(tmp, "proxy")
	if err := WriteProxy(proxyDir, s.lib, s.tool); err != nil {
		t.Fatal(err)
	}
	// Between the proxy directory and the configured proxy: the modules
	// the module cache already holds (its download directory is laid out
	// as a proxy), so that the dependencies the other tests fetched are
	// not fetched again.
	dirs := []string{proxyDir}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if dl := filepath.Join(strings.TrimSpace(string(out)), "cache", "download"); isDir(dl) {
			dirs = append(dirs, dl)
		}
	}
	env, err := ProxyEnv(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(tmp, "bin")
	env = SetEnv(env, "GOBIN="+gobin, "GOMODCACHE="+filepath.Join(tmp, "modcache"))
	t.Cleanup(func() {
		// The module cache is read-only; go clean empties it.
		if out, err := goCommand(t, tmp, env, "clean", "-modcache"); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	work := filepath.Join(tmp, "empty")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}

	install := func(version string) {
		t.Helper()
		args := strings.Fields(string(line[0]))
		args[len(args)-1] = ToolPath + "@" + version
		start := time.Now()
		out, err := goCommand(t, work, env, args[1:]...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("%s: %s", strings.Join(args, " "), time.Since(start).Round(time.Second/10))
		cmd := exec.Command(filepath.Join(gobin, "redelay"), "version", "-o", "json")
		cmd.Dir = work
		vout, err := cmd.Output()
		if err != nil {
			t.Fatalf("redelay version: %v", err)
		}
		var v struct {
			Version        string `json:"version"`
			LibraryVersion string `json:"library_version"`
			LibraryReplace string `json:"library_replace"`
		}
		if err := json.Unmarshal(vout, &v); err != nil {
			t.Fatalf("redelay version -o json: %v\n%s", err, vout)
		}
		if v.Version != s.tool.Version || v.LibraryVersion != s.libVersion || v.LibraryReplace != "" {
			t.Fatalf("after %s, redelay version says tool %s, library %s (replaced by %q); want tool %s, library %s", strings.Join(args, " "),
				v.Version, v.LibraryVersion, v.LibraryReplace, s.tool.Version, s.libVersion)
		}
		if err := os.Remove(filepath.Join(gobin, "redelay")); err != nil {
			t.Fatal(err)
		}
	}
	install(s.tool.Version)
	install("latest")
}

// TestGoCommandFetchesTheSame has the go command fetch the pinned
// library, and the tool at HEAD, from this checkout by git, as the module
// proxy fetches them from GitHub (git's url.insteadOf sends the
// repository's address here): the hashes it records must be go.sum's, and
// those of the zips the proxy directory above serves. The go command also
// checks, as it does for a user's go get, that each pseudo-version names
// its commit's time and the tag below it.
func TestGoCommandFetchesTheSame(t *testing.T) {
	s := newSetup(t)
	s.checkSums(t)

	tmp := t.TempDir()
	gitconfig := filepath.Join(tmp, "gitconfig")
	conf := "[url \"file://" + s.repo.Root + "\"]\n\tinsteadOf = https://" + LibraryPath + "\n"
	if err := os.WriteFile(gitconfig, []byte(conf), 0o666); err != nil {
		t.Fatal(err)
	}
	env := SetEnv(os.Environ(),
		"GOWORK=off", "GOFLAGS=", "GOPROXY=direct", "GOVCS=github.com:git",
		"GONOSUMDB="+LibraryPath, "GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GIT_CONFIG_GLOBAL="+gitconfig, "GIT_CONFIG_NOSYSTEM=1",
	)
	t.Cleanup(func() {
		if out, err := goCommand(t, tmp, env, "clean", "-modcache"); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	for _, m := range []Module{s.lib, s.tool} {
		out, err := goCommand(t, tmp, env, "mod", "download", "-json", m.Path+"@"+m.Version)
		if err != nil {
			t.Fatalf("go mod download %s@%s from this checkout: %v\n%s", m.Path, m.Version, err, out)
		}
		var got struct{ Sum, GoModSum string }
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("go mod download -json: %v\n%s", err, out)
		}
		zipHash, err := m.ZipHash()
		if err != nil {
			t.Fatal(err)
		}
		modHash, err := m.ModHash()
		if err != nil {
			t.Fatal(err)
		}
		if got.Sum != zipHash || got.GoModSum != modHash {
			t.Errorf("%s@%s: the go command's fetch hashes to %s and %s/go.mod; the zip of commit %s to %s and %s",
				m.Path, m.Version, got.Sum, got.GoModSum, m.Commit.Short(), zipHash, modHash)
		}
	}
}

func TestRequirement(t *testing.T) {
	const head = "module " + ToolPath + "\n\ngo 1.26.0\n\nrequire " + LibraryPath + " v0.0.0-20260101000000-0123456789ab\n"
	if v, err := Requirement([]byte(head)); err != nil || v != "v0.0.0-20260101000000-0123456789ab" {
		t.Errorf("Requirement = %q, %v", v, err)
	}
	for _, replace := range []string{
		"replace " + LibraryPath + " => ../..\n",
		"replace " + LibraryPath + " v0.0.0-20260101000000-0123456789ab => ../..\n",
		"replace github.com/spf13/cobra => ../cobra\n",
	} {
		if _, err := Requirement([]byte(head + replace)); err == nil || !strings.Contains(err.Error(), "replace") {
			t.Errorf("Requirement with %q: err = %v, want one about the replace", replace, err)
		}
	}
	if _, err := Requirement([]byte("module " + ToolPath + "\n")); err == nil {
		t.Error("Requirement of a go.mod without the library: no error")
	}
}

func goCommand(t *testing.T, dir string, env []string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

func isDir(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}
