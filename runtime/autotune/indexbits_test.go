package autotune

import (
	"testing"

	"github.com/strata-ir/strata/passes/togpu"
)

// otherIndexBits is the index width the default does not use.
var otherIndexBits = map[int64]int64{32: 64, 64: 32}[togpu.DefaultConfig.IndexBits]

// TestIndexBitsCandidates checks that programs with pointwise or row
// kernels time both index widths, the default's variant with the other
// width second (the budget never skips it), and that mma-only programs do
// not.
func TestIndexBitsCandidates(t *testing.T) {
	for _, k := range []Kernel{{Mapping: togpu.MappingPointwise, Vector: 4}, {Mapping: togpu.MappingRow, RowsPerBlock: 1}, {Mapping: togpu.MappingRow, RowsPerBlock: 4}} {
		cands := Candidates([]Kernel{k})
		want := togpu.DefaultConfig
		want.IndexBits = otherIndexBits
		if len(cands) < 2 || cands[0] != togpu.DefaultConfig || cands[1] != want {
			t.Errorf("%s kernel: candidates start %v, want the default, then it with index-bits=%d", k.Mapping, cands[:min(2, len(cands))], otherIndexBits)
		}
		n := 0
		for _, c := range cands {
			if c.IndexBits == otherIndexBits {
				n++
			}
		}
		if n != len(cands)/2 {
			t.Errorf("%s kernel: %d of %d candidates with index-bits=%d, want half", k.Mapping, n, len(cands), otherIndexBits)
		}
	}
	for _, c := range Candidates([]Kernel{{Mapping: togpu.MappingMMA, Block: 256}}) {
		if c.IndexBits != togpu.DefaultConfig.IndexBits {
			t.Errorf("mma kernels: candidate %s varies index-bits", ConfigString(c))
		}
	}
}

func TestIndexBitsConfigString(t *testing.T) {
	c := togpu.DefaultConfig
	c.IndexBits = otherIndexBits
	s := ConfigString(c)
	if got, err := ParseConfig(s); err != nil || got != c {
		t.Errorf("round trip of %q: %+v, %v", s, got, err)
	}
	if s == ConfigString(togpu.DefaultConfig) {
		t.Errorf("ConfigString drops index-bits=%d: %q", otherIndexBits, s)
	}
	if _, err := ParseConfig(ConfigString(togpu.DefaultConfig) + " index-bits=16"); err == nil {
		t.Error("ParseConfig accepted index-bits=16")
	}
}

// TestIndexBitsCompiles checks that the candidate compiles through
// GPUPipeline.
func TestIndexBitsCompiles(t *testing.T) {
	c := togpu.DefaultConfig
	c.IndexBits = otherIndexBits
	for _, file := range []string{"elementwise.mlir", "softmax.mlir"} {
		if _, err := compiler(t, file).Compile(c); err != nil {
			t.Errorf("%s with %s: %v", file, ConfigString(c), err)
		}
	}
}

// TestCandidatesExpandMath: a candidate compiles what the default pipeline
// does, f64 math (expanded after the conversion) included.
func TestCandidatesExpandMath(t *testing.T) {
	if _, err := compiler(t, "tanh_f64.mlir").Compile(togpu.DefaultConfig); err != nil {
		t.Errorf("f64 tanh through GPUPipeline: %v", err)
	}
}
