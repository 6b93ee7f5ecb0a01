// Command pinlibrary makes the tool's module (cmd/redelay) require the
// library at a commit of this repository, as `go get` would name it, with
// go.sum's hashes of that commit's module zip and go.mod: the require that
// `go install github.com/redelay/redelay/cmd/redelay@latest` needs, in
// place of a replace directive, which go install refuses. Development
// still builds the tool against the checkout's library, through
// cmd/redelay/go.work.
//
// Usage, from anywhere in the checkout (scripts/pin-library.sh runs it):
//
//	go run ./internal/pinlibrary [REV]
//
// REV defaults to the newest commit on HEAD's first-parent history that
// changed a file of the library module (so pinning again after committing
// the pin changes nothing). An explicit REV must be HEAD or one of its
// ancestors: users fetch the pinned commit from main's history, so it must
// be committed and reach main.
//
// It sets the require with go mod edit, then runs go mod tidy with
// GOWORK=off against a module proxy directory that serves the library at
// that version, zipped from the commit (so tidy records the go.sum lines
// and any requirement the library's new dependencies need), checks the
// recorded hashes against its own, and builds the tool against the pinned
// library the way go install will. The pinned version lands in the module
// cache like any downloaded module.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/redelay/redelay/cmd/redelay/internal/modpin"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pin-library:", err)
		os.Exit(1)
	}
}

func run(args []string) (err error) {
	if len(args) > 1 || len(args) == 1 && strings.HasPrefix(args[0], "-") {
		return errors.New("usage: pin-library [REV] (default: the newest commit that changed the library)")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repo, err := modpin.Open(wd)
	if err != nil {
		return err
	}
	defer repo.Close()
	if repo.Shallow() {
		return errors.New("this clone is shallow: the pin needs the history (git fetch --unshallow)")
	}
	head, err := repo.Commit("HEAD")
	if err != nil {
		return err
	}
	var c modpin.Commit
	if len(args) == 1 {
		if c, err = repo.Commit(args[0]); err != nil {
			return err
		}
		on, err := repo.IsAncestor(c, head)
		if err != nil {
			return err
		}
		if !on {
			return fmt.Errorf("%s (%s) is not on HEAD's history: users fetch the pinned commit from main, so pin a commit main has", args[0], c.Short())
		}
	} else if c, err = repo.LastLibraryChange(head); err != nil {
		return err
	}
	lib, err := repo.Library(c)
	if err != nil {
		return err
	}
	zipHash, err := lib.ZipHash()
	if err != nil {
		return err
	}
	modHash, err := lib.ModHash()
	if err != nil {
		return err
	}
	if dirty, err := repo.UncommittedLibraryChanges(); err != nil {
		return err
	} else if dirty {
		fmt.Fprintf(os.Stderr, "pin-library: the work tree has uncommitted changes to the library; the pin is commit %s without them\n", c.Short())
	}

	tmp, err := os.MkdirTemp("", "redelay-pin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proxyDir := filepath.Join(tmp, "proxy")
	if err := modpin.WriteProxy(proxyDir, lib); err != nil {
		return err
	}
	env, err := modpin.ProxyEnv(proxyDir)
	if err != nil {
		return err
	}
	toolDir := filepath.Join(repo.Root, filepath.FromSlash(modpin.ToolDir))
	goCmd := func(args ...string) error {
		cmd := exec.Command("go", args...)
		cmd.Dir = toolDir
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), modpin.ToolDir, err, out.String())
		}
		return nil
	}
	// On failure, go.mod and go.sum go back to what they were.
	var saved [][]byte
	names := []string{"go.mod", "go.sum"}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(toolDir, name))
		if err != nil {
			return err
		}
		saved = append(saved, data)
	}
	defer func() {
		if err == nil {
			return
		}
		for i, name := range names {
			if werr := os.WriteFile(filepath.Join(toolDir, name), saved[i], 0o666); werr != nil {
				err = errors.Join(err, werr)
			}
		}
	}()
	if err := goCmd("mod", "edit", "-dropreplace="+modpin.LibraryPath, "-require="+modpin.LibraryPath+"@"+lib.Version); err != nil {
		return err
	}
	if err := goCmd("mod", "tidy"); err != nil {
		return err
	}
	gosum, err := os.ReadFile(filepath.Join(toolDir, "go.sum"))
	if err != nil {
		return err
	}
	gotZip, gotMod := modpin.Sums(gosum, lib.Path, lib.Version)
	if gotZip != zipHash || gotMod != modHash {
		return fmt.Errorf("go.sum records %s %s / %s, but the zip of %s hashes to %s / %s", lib.Version, gotZip, gotMod, c.Short(), zipHash, modHash)
	}
	// What go install will do: the tool against the pinned library, not
	// the checkout's.
	if err := goCmd("build", "-o", os.DevNull, "."); err != nil {
		return fmt.Errorf("the tool does not build against the library at %s; pin a newer commit, or commit the library's change first:\n%v", c.Short(), err)
	}
	fmt.Printf("%s requires %s %s\n\tcommit %s of %s\n\t%s %s\n\t%s %s/go.mod %s\n",
		modpin.ToolDir, lib.Path, lib.Version, c.Hash, c.Time.Format("2006-01-02 15:04:05 UTC"),
		lib.Path, lib.Version+" "+zipHash, lib.Path, lib.Version, modHash)
	return nil
}
