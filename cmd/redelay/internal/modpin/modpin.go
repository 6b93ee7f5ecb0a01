// Package modpin names, zips and hashes the modules of this repository
// the way the go command and the Go module proxy do, so that the tool's
// go.mod can require the library at a commit of this repository rather
// than replace it with a directory, and so that a test can install the
// tool as a user does, from a module proxy directory that serves both
// modules zipped from their commits.
//
// A module version is what `go get` names a commit: its tag, or a
// pseudo-version v0.0.0-yyyymmddhhmmss-abcdefabcdef (commit time in UTC,
// then the first 12 hex digits of the hash; based on the newest tag below
// it, when there is one). Its zip holds the files `git archive` gives for
// the commit, less nested modules (cmd/redelay, bench, deploy,
// examples/tracing, ...) and what else golang.org/x/mod/zip leaves out, as
// the go command's own fetch from version control does. Its hashes are
// those of go.sum: golang.org/x/mod/sumdb/dirhash's h1 of the zip, and of
// the go.mod file alone.
package modpin

import (
	stdzip "archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

const (
	// LibraryPath is the library's module path, at the repository's root.
	LibraryPath = "github.com/redelay/redelay"
	// ToolPath is the command-line tool's module path.
	ToolPath = LibraryPath + "/" + ToolDir
	// ToolDir is the tool's module directory in the repository.
	ToolDir = "cmd/redelay"
)

// Repo is a git checkout of this repository.
type Repo struct {
	// Root is the top of the work tree.
	Root string
	// vcsRoot is the directory handed to zip.CreateFromVCS, which wants
	// one whose .git is the git directory: Root itself, or, for a linked
	// work tree (git worktree add), whose .git is a file, a temporary
	// directory whose .git links to the work tree's git directory. Both
	// reach the same objects, and commits are named by hash.
	vcsRoot string
	tmp     string
}

// Open finds the git checkout that holds dir.
func Open(dir string) (*Repo, error) {
	top, err := git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git checkout of redelay (%v)", dir, err)
	}
	r := &Repo{Root: top, vcsRoot: top}
	gitDir, err := r.git("rev-parse", "--absolute-git-dir")
	if err != nil {
		return nil, err
	}
	if filepath.Clean(gitDir) != filepath.Join(top, ".git") {
		tmp, err := os.MkdirTemp("", "redelay-vcs-")
		if err != nil {
			return nil, err
		}
		if err := os.Symlink(gitDir, filepath.Join(tmp, ".git")); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		r.vcsRoot, r.tmp = tmp, tmp
	}
	return r, nil
}

// Close removes what Open made.
func (r *Repo) Close() error {
	if r.tmp == "" {
		return nil
	}
	return os.RemoveAll(r.tmp)
}

// Shallow reports whether the checkout is a shallow clone, whose history
// stops short of its first commit.
func (r *Repo) Shallow() bool {
	out, err := r.git("rev-parse", "--is-shallow-repository")
	return err == nil && out == "true"
}

// Commit is one commit of the repository.
type Commit struct {
	Hash string
	Time time.Time // committer time, as the go command dates a commit
}

// Short is the hash's prefix a pseudo-version carries.
func (c Commit) Short() string { return c.Hash[:12] }

// Commit resolves rev (a hash, its prefix, a branch, HEAD~2, ...).
func (r *Repo) Commit(rev string) (Commit, error) {
	out, err := r.git("show", "-s", "--format=%H %ct", rev+"^{commit}", "--")
	if err != nil {
		return Commit{}, fmt.Errorf("no commit %s in %s: %v", rev, r.Root, err)
	}
	hash, ct, _ := strings.Cut(out, " ")
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return Commit{}, fmt.Errorf("commit %s: time %q: %v", rev, ct, err)
	}
	return Commit{Hash: hash, Time: time.Unix(sec, 0).UTC()}, nil
}

// IsAncestor reports whether a is b or one of b's ancestors.
func (r *Repo) IsAncestor(a, b Commit) (bool, error) {
	cmd := exec.Command("git", "merge-base", "--is-ancestor", a.Hash, b.Hash)
	cmd.Dir = r.Root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil
	default:
		return false, fmt.Errorf("git merge-base --is-ancestor: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
}

// File returns a file of commit c, by its slash-separated path from the
// repository's root.
func (r *Repo) File(c Commit, name string) ([]byte, error) {
	cmd := exec.Command("git", "cat-file", "blob", c.Hash+":"+name)
	cmd.Dir = r.Root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %v: %s", name, c.Short(), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// moduleDirs lists the directories of commit c that hold a go.mod below
// the root: the nested modules, which the library's zip leaves out.
func (r *Repo) moduleDirs(c Commit) ([]string, error) {
	out, err := r.git("ls-tree", "-r", "--name-only", c.Hash)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, name := range strings.Split(out, "\n") {
		if path.Base(name) == "go.mod" && name != "go.mod" {
			dirs = append(dirs, path.Dir(name))
		}
	}
	return dirs, nil
}

// LastLibraryChange returns the newest commit on the first-parent
// history of rev (main's own commits and merges, not the commits of the
// branches merged into it) that changed a file of the library module,
// that is a file outside every nested module. The library's zip is the
// same at that commit as at rev, so pinning it rather than rev gives the
// same pin for every later commit that only touches the tool, the
// benchmark or the docs of a nested module.
func (r *Repo) LastLibraryChange(rev Commit) (Commit, error) {
	dirs, err := r.moduleDirs(rev)
	if err != nil {
		return Commit{}, err
	}
	args := []string{"log", "--first-parent", "-1", "--format=%H", rev.Hash, "--", "."}
	for _, d := range dirs {
		args = append(args, ":(exclude)"+d)
	}
	out, err := r.git(args...)
	if err != nil {
		return Commit{}, err
	}
	if out == "" {
		return rev, nil
	}
	c, err := r.Commit(out)
	if err != nil {
		return Commit{}, err
	}
	// The same files, unless a nested module appeared or went away since
	// (a go.mod added to a directory the library held): compare the zips.
	at, err := r.Library(c)
	if err != nil {
		return Commit{}, err
	}
	now, err := r.Library(rev)
	if err != nil {
		return Commit{}, err
	}
	atFiles, err1 := at.files()
	nowFiles, err2 := now.files()
	if err := errors.Join(err1, err2); err != nil {
		return Commit{}, err
	}
	if atFiles != nowFiles {
		return rev, nil
	}
	return c, nil
}

// files hashes the zip's files by their names in the module, without
// the path@version/ prefix, which differs from one version to the next.
func (m Module) files() (string, error) {
	z, err := stdzip.NewReader(bytes.NewReader(m.Zip), int64(len(m.Zip)))
	if err != nil {
		return "", err
	}
	prefix := m.Path + "@" + m.Version + "/"
	byName := map[string]*stdzip.File{}
	var names []string
	for _, f := range z.File {
		name := strings.TrimPrefix(f.Name, prefix)
		byName[name] = f
		names = append(names, name)
	}
	return dirhash.Hash1(names, func(name string) (io.ReadCloser, error) {
		return byName[name].Open()
	})
}

// Version names commit c as a version of the module whose tags carry
// prefix ("" for the library, "cmd/redelay/" for the tool), as the go
// command does: the highest canonical v0 or v1 tag on the commit, or else
// a pseudo-version based on the highest such tag in its history (none
// yet: v0.0.0-yyyymmddhhmmss-abcdefabcdef). Retractions, which the go
// command also weighs, are not read: redelay has retracted nothing.
func (r *Repo) Version(c Commit, prefix string) (string, error) {
	tagVersion := func(tag string) (v string, canonical bool) {
		if !strings.HasPrefix(tag, prefix) || module.IsPseudoVersion(tag) {
			return "", false
		}
		trimmed := tag[len(prefix):]
		v = semver.Canonical(trimmed)
		if v == "" || !strings.HasPrefix(trimmed, v) || !module.MatchPathMajor(v, "") {
			return "", false
		}
		return v, v == trimmed
	}
	on, err := r.git("tag", "--points-at", c.Hash)
	if err != nil {
		return "", err
	}
	highest := ""
	for _, tag := range strings.Fields(on) {
		if v, canonical := tagVersion(tag); canonical && semver.Compare(v, highest) > 0 {
			highest = v
		}
	}
	if highest != "" {
		return highest, nil
	}
	below, err := r.git("tag", "--merged", c.Hash)
	if err != nil {
		return "", err
	}
	base := ""
	for _, tag := range strings.Fields(below) {
		if v, _ := tagVersion(tag); v != "" && semver.Compare(v, base) > 0 {
			base = v
		}
	}
	return module.PseudoVersion("", base, c.Time, c.Short()), nil
}

// UncommittedLibraryChanges reports whether the work tree differs from
// HEAD in a file of the library module (untracked files too), which no
// pin of a commit can carry.
func (r *Repo) UncommittedLibraryChanges() (bool, error) {
	head, err := r.Commit("HEAD")
	if err != nil {
		return false, err
	}
	dirs, err := r.moduleDirs(head)
	if err != nil {
		return false, err
	}
	args := []string{"status", "--porcelain", "--", "."}
	for _, d := range dirs {
		args = append(args, ":(exclude)"+d)
	}
	out, err := r.git(args...)
	return out != "", err
}

// Module is one module version as a proxy serves it.
type Module struct {
	Path, Version string
	Commit        Commit
	Mod           []byte // its go.mod
	Zip           []byte
}

// Library returns the library module at commit c.
func (r *Repo) Library(c Commit) (Module, error) {
	return r.module(c, LibraryPath, "", "")
}

// Tool returns the tool's module at commit c.
func (r *Repo) Tool(c Commit) (Module, error) {
	return r.module(c, ToolPath, ToolDir, ToolDir+"/")
}

func (r *Repo) module(c Commit, modPath, dir, tagPrefix string) (Module, error) {
	v, err := r.Version(c, tagPrefix)
	if err != nil {
		return Module{}, err
	}
	m := Module{Path: modPath, Version: v, Commit: c}
	if m.Mod, err = r.File(c, path.Join(dir, "go.mod")); err != nil {
		return Module{}, err
	}
	var buf bytes.Buffer
	// subdir "" zips the root module; the nested modules' files are
	// left out by zip.Create, as the go command leaves them out.
	subdir := dir
	if err := zip.CreateFromVCS(&buf, module.Version{Path: modPath, Version: v}, r.vcsRoot, c.Hash, subdir); err != nil {
		return Module{}, err
	}
	m.Zip = buf.Bytes()
	return m, nil
}

// ZipHash is the h1: hash go.sum records for the module's zip.
func (m Module) ZipHash() (string, error) {
	f, err := os.CreateTemp("", "redelay-module-*.zip")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(m.Zip)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return dirhash.HashZip(f.Name(), dirhash.Hash1)
}

// ModHash is the h1: hash go.sum records for the module's go.mod
// (the line whose version ends in /go.mod).
func (m Module) ModHash() (string, error) {
	return GoModHash(m.Mod)
}

// GoModHash is the h1: hash of a go.mod file, as go.sum records it.
func GoModHash(gomod []byte) (string, error) {
	return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
}

// WriteProxy lays out modules in dir as a GOPROXY=file://dir serves them:
// for each, @v/list (pseudo-versions are left out of it, as a proxy does),
// @v/VERSION.info, .mod and .zip, and @latest, which the go command asks
// for when the list names no tagged version.
func WriteProxy(dir string, mods ...Module) error {
	byPath := map[string][]Module{}
	for _, m := range mods {
		byPath[m.Path] = append(byPath[m.Path], m)
	}
	for p, ms := range byPath {
		ep, err := module.EscapePath(p)
		if err != nil {
			return err
		}
		base := filepath.Join(dir, filepath.FromSlash(ep))
		if err := os.MkdirAll(filepath.Join(base, "@v"), 0o777); err != nil {
			return err
		}
		var list []string
		var latest Module
		for _, m := range ms {
			ev, err := module.EscapeVersion(m.Version)
			if err != nil {
				return err
			}
			info, err := json.Marshal(struct {
				Version string
				Time    time.Time
			}{m.Version, m.Commit.Time})
			if err != nil {
				return err
			}
			for name, data := range map[string][]byte{".info": info, ".mod": m.Mod, ".zip": m.Zip} {
				if err := os.WriteFile(filepath.Join(base, "@v", ev+name), data, 0o666); err != nil {
					return err
				}
			}
			if latest.Version == "" || semver.Compare(m.Version, latest.Version) > 0 {
				latest = m
				if err := os.WriteFile(filepath.Join(base, "@latest"), info, 0o666); err != nil {
					return err
				}
			}
			if !module.IsPseudoVersion(m.Version) {
				list = append(list, m.Version)
			}
		}
		semver.Sort(list)
		text := strings.Join(list, "\n")
		if text != "" {
			text += "\n"
		}
		if err := os.WriteFile(filepath.Join(base, "@v", "list"), []byte(text), 0o666); err != nil {
			return err
		}
	}
	return nil
}

// ProxyEnv returns the environment for the go command to fetch modules
// as a user outside any workspace does, from the module proxy
// directories dirs first and then from the proxies the environment
// names (go env GOPROXY): GOWORK=off, GOFLAGS empty, and the library's
// modules left out of the checksum database, which has never seen their
// unpublished commits (go.sum still checks them).
func ProxyEnv(dirs ...string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOPROXY", "GONOSUMDB").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("go env GOPROXY GONOSUMDB: %q", out)
	}
	var proxies []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		proxies = append(proxies, "file://"+filepath.ToSlash(abs))
	}
	if lines[0] != "" {
		proxies = append(proxies, lines[0])
	}
	nosumdb := LibraryPath
	if lines[1] != "" {
		nosumdb = lines[1] + "," + nosumdb
	}
	return SetEnv(os.Environ(),
		"GOWORK=off", "GOFLAGS=",
		"GOPROXY="+strings.Join(proxies, ","),
		"GONOSUMDB="+nosumdb,
	), nil
}

// SetEnv returns env with each KEY=VALUE of set in place of any earlier
// value of KEY.
func SetEnv(env []string, set ...string) []string {
	keys := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// Requirement returns the version of the library that a go.mod requires,
// and fails if it replaces the library or anything else: a user's `go
// install` refuses a module whose go.mod has a replace directive.
func Requirement(gomod []byte) (string, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	if len(f.Replace) > 0 {
		var rs []string
		for _, r := range f.Replace {
			rs = append(rs, fmt.Sprintf("%s => %s", r.Old.Path, strings.TrimSpace(r.New.Path+" "+r.New.Version)))
		}
		return "", fmt.Errorf("go.mod has replace directives (%s): go install refuses such a module; develop with go.work instead", strings.Join(rs, "; "))
	}
	for _, req := range f.Require {
		if req.Mod.Path == LibraryPath {
			return req.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("go.mod does not require %s", LibraryPath)
}

// Sums returns what go.sum records for module path at version v: the
// hash of the zip and the hash of the go.mod ("" for one it lacks).
func Sums(gosum []byte, path, v string) (zipHash, modHash string) {
	for _, line := range strings.Split(string(gosum), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != path {
			continue
		}
		switch f[1] {
		case v:
			zipHash = f[2]
		case v + "/go.mod":
			modHash = f[2]
		}
	}
	return zipHash, modHash
}

// Pinned resolves the library version a go.mod requires to the commit it
// names (a pseudo-version's hash, or a tag), and checks that the version
// is exactly what the go command would call that commit.
func (r *Repo) Pinned(v string) (Commit, error) {
	rev := "refs/tags/" + v
	if module.IsPseudoVersion(v) {
		var err error
		if rev, err = module.PseudoVersionRev(v); err != nil {
			return Commit{}, err
		}
	}
	c, err := r.Commit(rev)
	if err != nil {
		return Commit{}, err
	}
	want, err := r.Version(c, "")
	if err != nil {
		return Commit{}, err
	}
	if want != v {
		return Commit{}, fmt.Errorf("%s names commit %s, which the go command calls %s", v, c.Short(), want)
	}
	return c, nil
}

func (r *Repo) git(args ...string) (string, error) {
	return git(r.Root, args...)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
