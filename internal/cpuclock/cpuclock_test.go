package cpuclock

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessCountsWork: busy loops on two goroutines add their CPU time, and sleeping adds next to none.
func TestProcessCountsWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no process CPU clock here")
	}
	t0, ok := Process()
	if !ok {
		t.Fatal("Process: not ok on a unix")
	}
	spin := func(d time.Duration, done chan<- struct{}) {
		x := 1.0
		for end := time.Now().Add(d); time.Now().Before(end); {
			for range 1000 {
				x = x*1.0000001 + 1e-9
			}
		}
		_ = x
		done <- struct{}{}
	}
	done := make(chan struct{})
	go spin(200*time.Millisecond, done)
	go spin(200*time.Millisecond, done)
	<-done
	<-done
	busy := Since(t0)
	// Two goroutines spinning for 0.2 s use at least 0.2 s of CPU however the scheduler places them.
	if busy < 150*time.Millisecond {
		t.Errorf("two goroutines spinning 0.2 s each: %v of CPU, want at least 0.15 s", busy)
	}
	t1, _ := Process()
	time.Sleep(200 * time.Millisecond)
	if idle := Since(t1); idle > 100*time.Millisecond {
		t.Errorf("sleeping 0.2 s: %v of CPU, want next to none", idle)
	}
}
