package train

import "testing"

func TestOpenBLASCoreFor(t *testing.T) {
	all := vectorUnits{avx: true, avx2FMA: true, avx512: true}
	for _, c := range []struct {
		chosen string
		v      vectorUnits
		want   string
	}{
		{"Prescott", all, "SkylakeX"},
		{"Prescott", vectorUnits{avx: true, avx2FMA: true}, "Haswell"},
		{"Prescott", vectorUnits{avx: true}, "Sandybridge"},
		{"Prescott", vectorUnits{}, ""}, // an SSE3 machine: the fallback is right
		{"Haswell", all, ""},            // OpenBLAS's or the user's choice is kept
		{"Cooperlake", all, ""},         // a set OpenBLAS chose for a CPU it knows
		{"Zen", all, ""},                // likewise
		{"", all, ""},                   // the pure-Go build's (no OpenBLAS)
		{"float32 products on nfbo's AVX2/FMA", all, ""},
	} {
		if got := openblasCoreFor(c.chosen, c.v); got != c.want {
			t.Errorf("openblasCoreFor(%q, %+v) = %q, want %q", c.chosen, c.v, got, c.want)
		}
	}
}

// TestHostVectorUnits checks that the CPU's units nest as OpenBLAS's kernel sets assume: its AVX-512 set also
// runs AVX2/FMA code, and that one AVX code.
func TestHostVectorUnits(t *testing.T) {
	v := hostVectorUnits()
	t.Logf("%+v", v)
	if v.avx512 && !v.avx2FMA || v.avx2FMA && !v.avx {
		t.Errorf("vector units do not nest: %+v", v)
	}
}
