package autotune

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
)

// TestForDevice checks the tiling per device: the wgmma tile replaces the
// default on compute capability 9.0 only, a chosen mma.sync tiling stays,
// and a wgmma tiling falls back to the default elsewhere.
func TestForDevice(t *testing.T) {
	if !HopperTile.WGMMA {
		t.Errorf("HopperTile %s is not a wgmma tiling", HopperTile)
	}
	if _, err := togpu.ParseMMATile(HopperTile.String()); err != nil {
		t.Errorf("HopperTile is not in togpu.MMATiles: %v", err)
	}
	def := togpu.DefaultConfig
	other := def
	other.MMATile = togpu.MMATiles[1]
	wg := def
	wg.MMATile = HopperTile
	for _, tc := range []struct {
		cfg          togpu.Config
		major, minor int
		want         togpu.MMATile
	}{
		{def, 9, 0, HopperTile},
		{def, 8, 0, def.MMATile},
		{def, 10, 0, def.MMATile},
		{other, 9, 0, other.MMATile},
		{wg, 8, 9, def.MMATile},
		{wg, 9, 0, HopperTile},
	} {
		if got := ForDevice(tc.cfg, tc.major, tc.minor).MMATile; got != tc.want {
			t.Errorf("ForDevice(%s, %d.%d) = %s, want %s", tc.cfg.MMATile, tc.major, tc.minor, got, tc.want)
		}
	}
	cands := Candidates([]Kernel{{Mapping: togpu.MappingMMA}})
	isWG := func(c togpu.Config) bool { return c.MMATile.WGMMA }
	if !slices.ContainsFunc(cands, isWG) {
		t.Fatal("no wgmma tiling among the candidates")
	}
	if got := forDevice(cands, 8, 0); slices.ContainsFunc(got, isWG) || len(got) == 0 || got[0] != def {
		t.Errorf("sm_80: candidates %v", got)
	}
	hop := forDevice(cands, 9, 0)
	n := 0
	for _, c := range cands {
		if isWG(c) {
			n++
		}
	}
	if len(hop) != len(cands) || hop[0] != def {
		t.Fatalf("sm_90: candidates %v", hop)
	}
	tma, staged := 0, 0
	for _, c := range cands {
		if c.MMATile.TMA {
			tma++
		}
		if c.MMATile.TMA && c.MMATile.Staged {
			staged++
		}
	}
	if tma == 0 || staged == 0 {
		t.Fatalf("%d TMA tilings among the candidates, %d with the staged epilogue", tma, staged)
	}
	for i, c := range hop[1:] {
		if isWG(c) != (i < n) || c.MMATile.TMA != (i < tma) || (c.MMATile.TMA && c.MMATile.Staged) != (i < staged) {
			t.Errorf("sm_90: candidate %d is %s, want the %d wgmma tilings right after the default, the %d TMA ones first, the %d staged ones first of those",
				i+1, c.MMATile, n, tma, staged)
		}
	}
}

// ownGemm is a bf16 product whose function asks for Strata's kernels.
const ownGemm = `func.func @main(%x: tensor<64x32xbf16>, %w: tensor<32x48xbf16>) -> tensor<64x48xbf16> attributes {strata.matmul = "mma"} {
  %r = "graph.matmul"(%x, %w) : (tensor<64x32xbf16>, tensor<32x48xbf16>) -> tensor<64x48xbf16>
  return %r : tensor<64x48xbf16>
}
`

// TestFlashPass checks that the flash pass asks for the wgmma kernels on
// compute capability 9.0 only, and that every choice parses as a pipeline.
func TestFlashPass(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		wgmma        bool
	}{{9, 0, true}, {8, 0, false}, {9, 1, false}, {10, 0, false}, {0, 0, false}} {
		p := FlashPass(tc.major, tc.minor)
		if got := strings.Contains(p, "wgmma=true"); got != tc.wgmma {
			t.Errorf("FlashPass(%d, %d) = %q: wgmma %v, want %v", tc.major, tc.minor, p, got, tc.wgmma)
		}
		if _, err := passes.Parse("builtin.module(" + p + ")"); err != nil {
			t.Errorf("FlashPass(%d, %d) = %q: %v", tc.major, tc.minor, p, err)
		}
	}
}

// TestMatmulAttr checks strata.matmul = "mma": ModeConfig keeps such a
// program's matmuls on Strata's kernels although the library loads, the
// attribute survives lowering to the gpu level (where the search reads
// it), the search then has no library candidate, and the decision is
// logged; without the attribute the library is a candidate.
func TestMatmulAttr(t *testing.T) {
	defer func(f func() error) { loadCuBLASLt = f }(loadCuBLASLt)
	loadCuBLASLt = func() error { return nil }
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable(Topic)
	defer logs.Disable()

	ctx := dialects.NewContext()
	parse := func(src string) *ir.Operation {
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "own.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	own := parse(ownGemm)
	if cfg := ModeConfig(exec.ModeDefault, own); cfg.CuBLASLt {
		t.Error("ModeConfig put a strata.matmul = \"mma\" program on cuBLASLt")
	}
	if !strings.Contains(buf.String(), `matmuls on Strata's kernels (strata.matmul = "mma")`) {
		t.Errorf("log %q", buf.String())
	}
	own = passtest.Run(t, ownGemm, "builtin.module(lower-to-gpu)")
	kernels := Kernels(own)
	if !ownMatmuls(own) {
		t.Fatal("strata.matmul is gone after lowering")
	}
	if got := withPolicy("@main", own, kernels, 9, 0); slices.ContainsFunc(got, func(c togpu.Config) bool { return c.CuBLASLt }) {
		t.Error("a library candidate for a strata.matmul = \"mma\" program")
	}
	if !strings.Contains(buf.String(), `@main: strata.matmul = "mma": Strata's own matmul kernels only`) {
		t.Errorf("log %q", buf.String())
	}
	plain := parse(strings.Replace(ownGemm, ` attributes {strata.matmul = "mma"}`, "", 1))
	if cfg := ModeConfig(exec.ModeDefault, plain); !cfg.CuBLASLt {
		t.Error("ModeConfig kept a program without the attribute off cuBLASLt")
	}
	if got := withPolicy("@main", plain, kernels, 9, 0); !slices.ContainsFunc(got, func(c togpu.Config) bool { return c.CuBLASLt }) {
		t.Error("no library candidate without the attribute")
	}
}
