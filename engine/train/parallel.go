package train

import (
	"runtime"
	"sync"
)

// minParallelWork is the number of element updates below which a loop is
// not worth splitting across goroutines. Starting a goroutine and waiting
// for it costs a fraction of a microsecond while the other cores are busy,
// but up to ~100 µs when one must be woken on the VMs measured
// (BENCHMARKS.md, "The products split over the cores"), so loops that run
// many times in sequence are better split once, outside (as the LSTM's
// recurrence is, by sequence).
const minParallelWork = 1 << 12

// parallelRows calls f(lo, hi) on contiguous parts of [0, n) that together
// cover it, one part per core (GOMAXPROCS) on its own goroutine, when the n
// rows of work elements each are enough to pay for it; else f(0, n) on the
// caller. The element-wise loops of the CPU step run this way while their
// products run on the BLAS's threads; f must write only its own rows.
func parallelRows(n, work int, f func(lo, hi int)) {
	p := min(runtime.GOMAXPROCS(0), n)
	if p < 2 || n*work < minParallelWork {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := 1; k < p; k++ {
		lo, hi := k*n/p, (k+1)*n/p
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	f(0, n/p)
	wg.Wait()
}
