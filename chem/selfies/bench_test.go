package selfies

import "testing"

// benchRows loads the 10k GuacaMol table once per benchmark.
func benchRows(b *testing.B) (smiles, selfies []string) {
	b.Helper()
	rows := readMaybeGz(b, dataDir+"/generated/guacamol_10k_selfies_v2.0.0_scores.csv.gz")
	for _, r := range rows {
		smiles = append(smiles, r["smiles"])
		selfies = append(selfies, r["selfies"])
	}
	return smiles, selfies
}

// BenchmarkEncode encodes the 10k GuacaMol SMILES in turn with one reused
// Encoder; one op is one molecule.
func BenchmarkEncode(b *testing.B) {
	in, _ := benchRows(b)
	enc := NewEncoder(DefaultConstraints())
	var dst []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		dst, err = enc.AppendEncode(dst[:0], in[i%len(in)])
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mol/s")
}

// BenchmarkDecode decodes the 10k GuacaMol SELFIES in turn with one reused
// Decoder; one op is one molecule.
func BenchmarkDecode(b *testing.B) {
	_, in := benchRows(b)
	dec := NewDecoder(DefaultConstraints())
	var dst []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		dst, err = dec.AppendDecode(dst[:0], in[i%len(in)])
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mol/s")
}

// BenchmarkPackageLevel measures the convenience functions Encode and
// Decode, which take a pooled codec and return a new string.
func BenchmarkPackageLevel(b *testing.B) {
	smi, sf := benchRows(b)
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Encode(smi[i%len(smi)]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mol/s")
	})
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Decode(sf[i%len(sf)]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mol/s")
	})
}
