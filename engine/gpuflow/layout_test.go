//go:build cgo

package gpuflow

import "testing"

// swapAxes there and back is the identity, and it moves element (i, j, k) to (j, i, k).
func TestSwapAxes(t *testing.T) {
	const a, b, f = 3, 5, 2
	src := make([]float32, a*b*f)
	for i := range src {
		src[i] = float32(i)
	}
	mid, back := make([]float32, len(src)), make([]float32, len(src))
	swapAxes(mid, src, a, b, f)
	swapAxes(back, mid, b, a, f)
	for i := range a {
		for j := range b {
			for k := range f {
				if got, want := mid[(j*a+i)*f+k], src[(i*b+j)*f+k]; got != want {
					t.Fatalf("(%d, %d, %d): %v, want %v", i, j, k, got, want)
				}
			}
		}
	}
	for i := range src {
		if back[i] != src[i] {
			t.Fatalf("there and back: element %d is %v, want %v", i, back[i], src[i])
		}
	}
}
