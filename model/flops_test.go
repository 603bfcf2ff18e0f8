package model

import "testing"

// tinyFLOPsConfig is small enough to count by hand: K = 2 blocks of a
// 2-layer LSTM with H = 3, C = 2 NLSq couplings of depth 2 and width U = 5,
// F = 4 (h = 2), T = 3.
func tinyFLOPsConfig() Config {
	return Config{V: 5, F: 4, T: 3, MaxT: 4, Blocks: 2, LSTMLayers: 2, H: 3,
		Couplings: 2, U: 5, CouplingDepth: 2, Transform: NLSq}
}

func TestFlowFLOPsTiny(t *testing.T) {
	cfg := tinyFLOPsConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Per block, multiply-adds:
	//   LSTM, T−1 = 2 steps of 4H = 12 gate columns:
	//     layer 0 Wih[:F] 4 rows + Whh 3 rows, layer 1 Wih 3 + Whh 3 = 13 rows
	//     → 2·12·13 = 312
	//   couplings, T = 3 positions:
	//     context H·C·U = 3·2·5 = 30
	//     per coupling: cond h·U = 10, hidden U·U = 25, output U·h·np = 5·2·5 = 50 → 85, ×C = 170
	//     → 3·(30 + 170) = 600
	// Two blocks, two FLOPs per multiply-add: 2·2·(312 + 600) = 3648.
	if got, want := cfg.FlowFLOPs(), int64(3648); got != want {
		t.Errorf("FlowFLOPs = %d, want %d", got, want)
	}
	// Search: T·V·F = 3·5·4 = 60 multiply-adds.
	if got, want := cfg.DecodeSearchFLOPs(), int64(120); got != want {
		t.Errorf("DecodeSearchFLOPs = %d, want %d", got, want)
	}
	// Affine: np = 2, output U·h·np = 20 per coupling, so each block's
	// couplings cost 3·(30 + 2·55) = 420: 2·2·(312 + 420) = 2928.
	cfg.Transform = Affine
	if got, want := cfg.FlowFLOPs(), int64(2928); got != want {
		t.Errorf("affine FlowFLOPs = %d, want %d", got, want)
	}
}

// The count is affine in T (T−1 LSTM steps, T coupling positions), with a
// slope equal to one position's cost, and it does not depend on V or MaxT:
// the positional code is folded into per-block constants.
func TestFlowFLOPsScaling(t *testing.T) {
	for _, base := range []Config{tinyFLOPsConfig(), Small(174, 10), Paper(185, 10)} {
		at := func(T int) int64 {
			c := base
			c.T = T
			return c.FlowFLOPs()
		}
		c := base
		perStepLSTM := 2 * int64(c.Blocks) * 4 * int64(c.H) * int64(c.F+c.H+(c.LSTMLayers-1)*2*c.H)
		slope := at(3) - at(2)
		for T := 2; T < 40; T++ {
			if d := at(T+1) - at(T); d != slope {
				t.Fatalf("%+v: FLOPs(T=%d) − FLOPs(T=%d) = %d, want the constant slope %d", base, T+1, T, d, slope)
			}
		}
		// One LSTM step fewer than positions: FLOPs(T) = T·slope − one step.
		if got, want := at(7), 7*slope-perStepLSTM; got != want {
			t.Errorf("%+v: FLOPs(T=7) = %d, want 7·%d − %d = %d", base, got, slope, perStepLSTM, want)
		}
		c.V, c.MaxT = 3*c.V, 2*c.MaxT
		if c.FlowFLOPs() != base.FlowFLOPs() {
			t.Errorf("%+v: FlowFLOPs depends on V or MaxT", base)
		}
	}
}

// TestFlowFLOPsMatchesParams counts again from the tensor shapes that
// ZeroParams builds: every LSTM weight is applied at T−1 steps (layer 0's
// Wih without its P positional rows), every coupling weight at T positions,
// and the initial-state MLP not at all. It catches a layout change that
// FlowFLOPs does not follow.
func TestFlowFLOPsMatchesParams(t *testing.T) {
	for _, cfg := range []Config{tinyFLOPsConfig(), Small(267, 109), Small(174, 70), Paper(185, 100)} {
		p := ZeroParams(cfg)
		T := int64(cfg.T)
		var macs int64
		for _, b := range p.Blocks {
			for l, lw := range b.LSTM {
				rows := int64(lw.Wih.Shape[0])
				if l == 0 {
					rows -= int64(cfg.P())
				}
				macs += (T - 1) * (rows*int64(lw.Wih.Shape[1]) + int64(lw.Whh.Len()))
			}
			for _, c := range b.Couplings {
				for _, d := range c.Layers {
					macs += T * int64(d.W.Len())
				}
			}
		}
		if got := cfg.FlowFLOPs(); got != 2*macs {
			t.Errorf("V=%d T=%d blocks=%d: FlowFLOPs = %d, shapes give %d", cfg.V, cfg.T, cfg.Blocks, got, 2*macs)
		}
		t.Logf("V=%d T=%d blocks=%d H=%d: FlowFLOPs %d (%.1f MFLOP), DecodeSearchFLOPs %d",
			cfg.V, cfg.T, cfg.Blocks, cfg.H, cfg.FlowFLOPs(), float64(cfg.FlowFLOPs())/1e6, cfg.DecodeSearchFLOPs())
	}
}
