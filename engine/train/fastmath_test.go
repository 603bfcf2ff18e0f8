package train

import (
	"math"
	"testing"

	"github.com/nfbo/nfbo/kernels"
)

// The float32 functions themselves are checked in kernels (TestVectorMath);
// these check that each instantiation here uses the intended one.
func TestFastMathInstantiations(t *testing.T) {
	xs := []float64{-100, -9.5, -3.7, -0.6, -0.2, 0, 0.4, 0.7, 5, 12, 100}
	x32 := make([]float32, len(xs))
	for i, x := range xs {
		x32[i] = float32(x)
		if got, want := sigmoid(x32[i]), kernels.Sigmoid32(x32[i]); got != want {
			t.Errorf("sigmoid[float32](%g) = %g, want %g", x, got, want)
		}
		if got, want := tanhT(x32[i]), kernels.Tanh32(x32[i]); got != want {
			t.Errorf("tanhT[float32](%g) = %g, want %g", x, got, want)
		}
		if got, want := tanhT(x), math.Tanh(x); got != want {
			t.Errorf("tanhT[float64](%g) = %g, want %g", x, got, want)
		}
		if got, want := sigmoid(x), 1/(1+math.Exp(-x)); got != want {
			t.Errorf("sigmoid[float64](%g) = %g, want %g", x, got, want)
		}
		for _, c := range []struct {
			name     string
			of       func(bool, float64) float64
			f32, f64 float64
		}{
			{"expOf", expOf, float64(kernels.Exp32(x32[i])), math.Exp(x)},
			{"tanhOf", tanhOf, float64(kernels.Tanh32(x32[i])), math.Tanh(x)},
			{"logOf", logOf, float64(kernels.Log32(x32[i])), math.Log(x)},
		} {
			if got := c.of(true, x); got != c.f32 && !(got != got && c.f32 != c.f32) {
				t.Errorf("%s(true, %g) = %g, want %g", c.name, x, got, c.f32)
			}
			if got := c.of(false, x); got != c.f64 && !(got != got && c.f64 != c.f64) {
				t.Errorf("%s(false, %g) = %g, want %g", c.name, x, got, c.f64)
			}
		}
	}
	s, th := append([]float32(nil), x32...), append([]float32(nil), x32...)
	kernels.Sigmoid32s(s, s) // the slice forms the LSTM op's float32 cell calls
	kernels.Tanh32s(th, th)
	for i, x := range x32 {
		// The slice forms may round differently from the scalar ones in the
		// last places (kernels.TestVectorMath bounds it).
		if d := math.Abs(float64(s[i] - sigmoid(x))); d > 4e-7 {
			t.Errorf("Sigmoid32s at %g = %g, sigmoid %g", x, s[i], sigmoid(x))
		}
		if d := math.Abs(float64(th[i] - tanhT(x))); d > 4e-7 {
			t.Errorf("Tanh32s at %g = %g, tanhT %g", x, th[i], tanhT(x))
		}
	}
}
