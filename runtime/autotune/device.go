package autotune

import (
	"slices"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes/togpu"
)

// MatmulAttr is a string attribute of a func.func that overrides where
// its bf16/f16 matmuls run: togpu.MatmulMMA ("mma") keeps them on
// Strata's own kernels in every mode (ModeConfig then ignores the library
// and the search leaves it out), as the bench's gemm_own_bf16 measures
// them; another value, or none, leaves the choice to the policy.
const MatmulAttr = "strata.matmul"

// ownMatmuls reports whether a function of module asks for Strata's own
// matmul kernels (MatmulAttr = "mma").
func ownMatmuls(module *ir.Operation) bool {
	own := false
	module.Walk(func(op *ir.Operation) bool {
		if op.Name() == funcs.OpFunc {
			if s, ok := op.Attr(MatmulAttr).(ir.StringAttr); ok && s.Value == togpu.MatmulMMA {
				own = true
			}
			return false
		}
		return !own
	})
	return own
}

// HopperTile is the tiling of Strata's own matmul kernels on a device of
// compute capability 9.0 (H100, H200): the warp-specialized wgmma kernel
// whose producer copies with TMA and whose consumers store the output
// through workgroup memory (128x256x64s4wste). On the H200, in the same
// process as cuBLASLt (bench/NOTES.md, session 13, call 3): the 8192³
// bf16 product 785 TFLOP/s, 99.1% of cuBLASLt (128x256x64s4wst, the
// default before: 748, 94.4%; the persistent …wstep132 793, 100.0%, is
// left to the search: its grid is the H100/H200's 132 SMs); GPT-2's
// products 77–90% of cuBLASLt, 1.14–1.47× wst. Products whose rows TMA
// cannot address take the one-role 128x256x64s4go.
var HopperTile = togpu.MMATile{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Staged: true}

// hopper reports whether compute capability major.minor runs sm_90a code
// (gpu.wgmma).
func hopper(major, minor int) bool { return major == 9 && minor == 0 }

// ForDevice adapts cfg to a device of compute capability major.minor:
// on 9.0 the default tiling of the mma kernels becomes HopperTile; on any
// other device a wgmma tiling, which needs sm_90a, becomes the default
// mma.sync one.
func ForDevice(cfg togpu.Config, major, minor int) togpu.Config {
	switch {
	case hopper(major, minor) && cfg.MMATile == togpu.DefaultConfig.MMATile:
		cfg.MMATile = HopperTile
	case !hopper(major, minor) && cfg.MMATile.WGMMA:
		cfg.MMATile = togpu.DefaultConfig.MMATile
	}
	return cfg
}

// FlashPass is the graph-attention-to-flash pass for a device of compute
// capability major.minor: the wgmma kernels on 9.0 (sm_90a PTX), measured
// faster there (bench/NOTES.md session 4), the mma.sync ones elsewhere.
func FlashPass(major, minor int) string {
	if hopper(major, minor) {
		return togpu.FlashPassName + "{wgmma=true}"
	}
	return togpu.FlashPassName
}

// forDevice orders the search's candidates for a device of compute
// capability major.minor: on 9.0 the wgmma tilings come right after the
// default (the fastest there, so that the time budget never skips them),
// those copying with TMA first, the staged-epilogue ones first among
// them (the fastest: bench/NOTES.md, sessions 11 to 13); elsewhere they
// are dropped.
func forDevice(cands []togpu.Config, major, minor int) []togpu.Config {
	wgmma := func(c togpu.Config) bool { return c.MMATile.WGMMA }
	if !hopper(major, minor) {
		return slices.DeleteFunc(slices.Clone(cands), wgmma)
	}
	if len(cands) == 0 {
		return cands
	}
	out := []togpu.Config{cands[0]}
	for _, pick := range []func(togpu.Config) bool{
		func(c togpu.Config) bool { return c.MMATile.TMA && c.MMATile.Staged },
		func(c togpu.Config) bool { return c.MMATile.TMA && !c.MMATile.Staged },
		func(c togpu.Config) bool { return wgmma(c) && !c.MMATile.TMA },
		func(c togpu.Config) bool { return !wgmma(c) },
	} {
		for _, c := range cands[1:] {
			if pick(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// withPolicy returns the search's candidates for the kernels of module
// (the default configuration's compile) on a device of compute capability
// major.minor: Candidates, ordered or trimmed for the device, and
// cuBLASLt's unless module asks for Strata's own kernels (MatmulAttr).
func withPolicy(name string, module *ir.Operation, kernels []Kernel, major, minor int) []togpu.Config {
	cands := forDevice(Candidates(kernels), major, minor)
	if ownMatmuls(module) {
		logs.Printf(Topic, "%s: %s = %q: Strata's own matmul kernels only, no library candidate", name, MatmulAttr, togpu.MatmulMMA)
		return cands
	}
	return withLibrary(name, cands, kernels)
}
