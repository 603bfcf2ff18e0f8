package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "3483422b1f2a9c0d"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := describe(bi), "v1.2.3 (commit 3483422b1f2a, modified, go1.26.0)"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if got := describe(&debug.BuildInfo{}); got != "(devel)" {
		t.Errorf("describe of nothing = %q", got)
	}
	if Version() == "" {
		t.Error("Version() is empty")
	}
}
