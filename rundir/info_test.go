package rundir

import (
	"strings"
	"testing"
)

// TestParseInfoChecks: run.json's times read back, and negative ones are refused by name.
func TestParseInfoChecks(t *testing.T) {
	base := `{"suite": "s", "setting": "100+500", "task": "qed", "method": "nfbo", "seed": 1, "budget": 500`
	info, err := ParseInfo([]byte(base + `, "seconds": 12.5, "cpu_seconds": 30.25}`))
	if err != nil || info.Seconds != 12.5 || info.CPUSeconds != 30.25 {
		t.Errorf("times: %+v, %v", info, err)
	}
	if info, err := ParseInfo([]byte(base + `, "seconds": 3}`)); err != nil || info.CPUSeconds != 0 {
		t.Errorf("a run.json of before the CPU seconds: %+v, %v", info, err)
	}
	for _, c := range []struct{ extra, want string }{
		{`, "seconds": -1}`, "seconds -1"},
		{`, "seconds": 1, "cpu_seconds": -2}`, "cpu_seconds -2"},
	} {
		if _, err := ParseInfo([]byte(base + c.extra)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.extra, err, c.want)
		}
	}
}
