package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// libraryModule is the module path of the redelay library.
const libraryModule = "github.com/redelay/redelay"

// unknown is what version says of what the build information does not
// hold.
const unknown = "unknown"

// versionJSON is what the version command prints, and its JSON.
type versionJSON struct {
	// Version is the tool's module version: v1.2.3 when installed from a
	// tag, a pseudo-version (v0.0.0-20261203101020-9c64d7d9b737) from an
	// untagged commit, (devel) when built from a checkout.
	Version        string `json:"version"`
	Library        string `json:"library"`         // the library's module path
	LibraryVersion string `json:"library_version"` // (devel) when replaced by a directory
	// LibraryReplace is what the build replaced the library with: a
	// directory (../.., by go.work in a checkout) or another module;
	// empty for an installed tool, built with the version go.mod pins.
	LibraryReplace string `json:"library_replace,omitempty"`
	Go             string `json:"go"`       // the toolchain that built the tool
	Platform       string `json:"platform"` // GOOS/GOARCH
	// Commit is the revision the tool was built from, and Modified
	// whether the checkout had changes, when the build stamped them.
	Commit   string `json:"commit,omitempty"`
	Modified *bool  `json:"modified,omitempty"`
}

// versionCommand returns the version command.
func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of redelay, of its library and of Go",
		Long: `Print the version of this redelay tool ((devel) when built from a checkout),
of the redelay library it was built with, of the Go toolchain that built it,
and the platform; the commit when the build recorded it. It connects to
nothing.

-o json prints an object: version, library, library_version, library_replace
(what the build replaced the library with, when it did), go, platform, commit
and modified (when recorded).`,
		Args: exactArgs(),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if a.json() {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			t := newTable(cmd.OutOrStdout())
			fmt.Fprintf(t, "VERSION\t%s\n", v.Version)
			lib := v.Library + " " + v.LibraryVersion
			if v.LibraryReplace != "" {
				lib += ", replaced by " + v.LibraryReplace
			}
			fmt.Fprintf(t, "LIBRARY\t%s\n", lib)
			fmt.Fprintf(t, "GO\t%s\n", v.Go)
			fmt.Fprintf(t, "PLATFORM\t%s\n", v.Platform)
			if v.Commit != "" {
				commit := v.Commit
				if v.Modified != nil && *v.Modified {
					commit += " (modified)"
				}
				fmt.Fprintf(t, "COMMIT\t%s\n", commit)
			}
			return t.Flush()
		}),
	}
}

// buildVersion reads the versions from the build information of the
// running binary.
func buildVersion() versionJSON {
	v := versionJSON{
		Version: unknown, Library: libraryModule, LibraryVersion: unknown,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	if info.GoVersion != "" {
		v.Go = info.GoVersion
	}
	for _, dep := range info.Deps {
		if dep.Path != libraryModule {
			continue
		}
		v.LibraryVersion = dep.Version
		if r := dep.Replace; r != nil {
			v.LibraryReplace, v.LibraryVersion = r.Path, r.Version
			if r.Version == "" {
				// A directory: its version is the checkout's.
				v.LibraryVersion = "(devel)"
			}
		}
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			v.Modified = &m
		}
	}
	if v.Commit == "" {
		v.Modified = nil
	}
	return v
}
