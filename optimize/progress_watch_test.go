package optimize

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nfbo/nfbo/bo"
)

// TestProgressWatch: a long phase gets a line at every interval of silence, naming it; an iteration's line resets
// the silence; nothing is printed after stop.
func TestProgressWatch(t *testing.T) {
	var out lockedBuilder
	p := &progressPrinter{w: &out, every: 50 * time.Millisecond}
	stop := p.watch()
	p.Phase(0, "decoding the candidates")
	time.Sleep(130 * time.Millisecond)
	if err := p.Record(bo.Progress{Iteration: 1}); err != nil {
		t.Fatal(err)
	}
	stop()
	n := strings.Count(out.String(), "iter 1: decoding the candidates (")
	if n < 1 || n > 3 {
		t.Errorf("%d phase lines in 130 ms at 50 ms:\n%s", n, out.String())
	}
	before := out.String()
	time.Sleep(120 * time.Millisecond)
	if out.String() != before {
		t.Errorf("lines after stop:\n%s", out.String())
	}
}

// lockedBuilder is a strings.Builder safe for a writer goroutine and a reading test.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
