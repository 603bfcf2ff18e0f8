package cpuclock

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procStat returns the process's user plus system time from Linux's /proc/self/stat (fields 14 and 15, in clock
// ticks of 1/100 s, Linux's USER_HZ on every architecture Go supports): the kernel's own count, the reference.
func procStat(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after the command name, which may hold spaces
	var ticks int64
	for _, i := range []int{11, 12} { // utime and stime: fields 14 and 15, counted from field 3
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			t.Fatalf("/proc/self/stat field %d: %v", i+3, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// TestProcessAgreesWithKernel: after 0.3 s of work on two goroutines (counted by the clock itself, so a loaded
// machine only makes it take longer), Process agrees with /proc/self/stat to within its ticks, never goes back, and
// a sleep adds next to nothing.
func TestProcessAgreesWithKernel(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the reference is Linux's /proc/self/stat")
	}
	t0, ok := Process()
	if !ok {
		t.Fatal("Process: not ok on Linux")
	}
	done := make(chan struct{})
	spin := func() {
		x := 1.0
		for Since(t0) < 300*time.Millisecond {
			for range 10000 {
				x = x*1.0000001 + 1e-9
			}
		}
		_ = x
		done <- struct{}{}
	}
	go spin()
	go spin()
	<-done
	<-done
	got, _ := Process()
	ref := procStat(t)
	after, _ := Process()
	if got < t0+300*time.Millisecond || after < got {
		t.Errorf("Process: %v, then %v, after %v and 0.3 s of work: want at least 0.3 s more, never less", t0, got, after)
	}
	// The kernel's ticks are 10 ms; its count and getrusage's may round apart by a tick or two each way.
	if d := ref - got; d < -30*time.Millisecond || d > after-got+30*time.Millisecond {
		t.Errorf("Process %v (then %v), /proc/self/stat %v: more than three ticks apart", got, after, ref)
	}
	t1, _ := Process()
	time.Sleep(200 * time.Millisecond)
	if idle := Since(t1); idle > 100*time.Millisecond {
		t.Errorf("sleeping 0.2 s: %v of CPU, want next to none", idle)
	}
}
