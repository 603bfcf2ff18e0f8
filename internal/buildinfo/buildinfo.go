// Package buildinfo says which nfbo this is: the module version and the commit it was built from, read from
// the build information the Go toolchain embeds (go build in a git checkout records the commit).
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// commit is set by the Makefile's build (-ldflags -X) for builds without VCS stamping (GOFLAGS=-buildvcs=false,
// or a tree outside git): the commit, "+" when the checkout had changes.
var commit string

// Version returns e.g. "v0.0.0-20261126... (commit 3483422b1f2a, modified, go1.26.0)", or "unknown" when the
// binary carries no build information (a test binary built without VCS stamping says "(devel)").
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return describe(bi)
}

func describe(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" && commit != "" {
		rev, modified = strings.TrimSuffix(commit, "+"), fmt.Sprint(strings.HasSuffix(commit, "+"))
	}
	var extra []string
	if rev != "" {
		extra = append(extra, "commit "+rev[:min(12, len(rev))])
	}
	if modified == "true" {
		extra = append(extra, "modified")
	}
	if bi.GoVersion != "" {
		extra = append(extra, bi.GoVersion)
	}
	if len(extra) == 0 {
		return v
	}
	return v + " (" + strings.Join(extra, ", ") + ")"
}
