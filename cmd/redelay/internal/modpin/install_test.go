package modpin

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
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
	goFetchesTheSame(t, s.repo.Root, s.lib, s.tool)
}

// goFetchesTheSame has the go command fetch each module from the git
// repository at root, where git's url.insteadOf sends the library's
// address, and compares the hashes it records with the module's.
func goFetchesTheSame(t *testing.T, root string, mods ...Module) {
	t.Helper()
	tmp := t.TempDir()
	gitconfig := filepath.Join(tmp, "gitconfig")
	conf := "[url \"file://" + root + "\"]\n\tinsteadOf = https://" + LibraryPath + "\n"
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
	for _, m := range mods {
		out, err := goCommand(t, tmp, env, "mod", "download", "-json", m.Path+"@"+m.Version)
		if err != nil {
			t.Fatalf("go mod download %s@%s from %s: %v\n%s", m.Path, m.Version, root, err, out)
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

// A repository of its own, with tags, a merge and a nested module that
// appears: versions as the go command names them (it fetches each and
// checks its name), and the commit the pin script picks by default.
func TestTaggedRepository(t *testing.T) {
	g := newGitRepo(t)
	const libMod = "module " + LibraryPath + "\n\ngo 1.26.0\n"
	const toolMod = "module " + ToolPath + "\n\ngo 1.26.0\n"
	c1 := g.commit(map[string]string{
		"go.mod": libMod, "lib.go": "package redelay\n",
		"examples/t/main.go": "package main\n\nfunc main() {}\n",
	})
	g.git("tag", "v0.1.0")
	c2 := g.commit(map[string]string{ToolDir + "/go.mod": toolMod, ToolDir + "/main.go": "package main\n\nfunc main() {}\n"})
	c3 := g.commit(map[string]string{"lib.go": "package redelay\n\nconst A = 1\n"})
	g.git("checkout", "-q", "-b", "side")
	b1 := g.commit(map[string]string{"b.go": "package redelay\n\nconst B = 1\n"})
	g.git("checkout", "-q", "main")
	c4 := g.commit(map[string]string{ToolDir + "/main.go": "package main\n\nfunc main() { println() }\n"})
	g.git("tag", ToolDir+"/v0.2.0")
	g.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
	m := g.head()
	c5 := g.commit(map[string]string{ToolDir + "/main.go": "package main\n\nfunc main() { println(1) }\n"})
	c6 := g.commit(map[string]string{"examples/t/go.mod": "module " + LibraryPath + "/examples/t\n\ngo 1.26.0\n"})

	repo, err := Open(g.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	commit := func(hash string) Commit {
		t.Helper()
		c, err := repo.Commit(hash)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pseudo := func(base string, c Commit) string {
		return base + c.Time.Format("20060102150405") + "-" + c.Short()
	}
	for _, tc := range []struct {
		hash, prefix, want string
	}{
		{c1, "", "v0.1.0"},
		{c3, "", pseudo("v0.1.1-0.", commit(c3))},
		{b1, "", pseudo("v0.1.1-0.", commit(b1))},
		{c2, ToolDir + "/", pseudo("v0.0.0-", commit(c2))},
		{c4, ToolDir + "/", "v0.2.0"},
		{c5, ToolDir + "/", pseudo("v0.2.1-0.", commit(c5))},
	} {
		if got, err := repo.Version(commit(tc.hash), tc.prefix); err != nil || got != tc.want {
			t.Errorf("Version(%.12s, %q) = %q, %v; want %q", tc.hash, tc.prefix, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ rev, want string }{
		{c2, c1}, // the tool's module appeared: not the library's
		{c4, c3},
		{m, m},   // the merge brought b.go
		{c5, m},  // the tool only
		{c6, c6}, // examples/t left the library
	} {
		if got, err := repo.LastLibraryChange(commit(tc.rev)); err != nil || got.Hash != tc.want {
			t.Errorf("LastLibraryChange(%.12s) = %.12s, %v; want %.12s", tc.rev, got.Hash, err, tc.want)
		}
	}
	lib, err := repo.Library(commit(c6))
	if err != nil {
		t.Fatal(err)
	}
	names, err := zipNames(lib)
	if err != nil {
		t.Fatal(err)
	}
	if want := "b.go go.mod lib.go"; names != want {
		t.Errorf("the library's zip at %.12s holds %s; want %s", c6, names, want)
	}

	var mods []Module
	for _, c := range []string{c1, c3, m, c6} {
		lib, err := repo.Library(commit(c))
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, lib)
	}
	for _, c := range []string{c2, c4, c5} {
		tool, err := repo.Tool(commit(c))
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, tool)
	}
	goFetchesTheSame(t, repo.Root, mods...)
}

// gitRepo is a repository a test makes, its commits an hour apart.
type gitRepo struct {
	t   *testing.T
	dir string
	n   int
}

func newGitRepo(t *testing.T) *gitRepo {
	g := &gitRepo{t: t, dir: t.TempDir()}
	g.git("init", "-q", "-b", "main")
	return g
}

func (g *gitRepo) git(args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = g.dir
	date := time.Date(2026, 1, 1, g.n, 0, 0, 0, time.UTC).Format(time.RFC3339)
	cmd.Env = SetEnv(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=redelay", "GIT_AUTHOR_EMAIL=redelay@example.com", "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME=redelay", "GIT_COMMITTER_EMAIL=redelay@example.com", "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files and commits them, returning the commit's hash.
func (g *gitRepo) commit(files map[string]string) string {
	g.t.Helper()
	for name, text := range files {
		p := filepath.Join(g.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			g.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o666); err != nil {
			g.t.Fatal(err)
		}
	}
	g.n++
	g.git("add", "-A")
	g.git("commit", "-q", "-m", fmt.Sprintf("commit %d", g.n))
	return g.head()
}

func (g *gitRepo) head() string {
	g.t.Helper()
	return g.git("rev-parse", "HEAD")
}

// zipNames lists the files of a module's zip by their names in the
// module, sorted, separated by spaces.
func zipNames(m Module) (string, error) {
	z, err := zip.NewReader(bytes.NewReader(m.Zip), int64(len(m.Zip)))
	if err != nil {
		return "", err
	}
	var names []string
	for _, f := range z.File {
		names = append(names, strings.TrimPrefix(f.Name, m.Path+"@"+m.Version+"/"))
	}
	sort.Strings(names)
	return strings.Join(names, " "), nil
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
