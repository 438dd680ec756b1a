package autotune

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/exec"
)

// mmBiasGelu is the bench's mm_bias_gelu: gelu_tanh(x@w + b) in bf16.
const mmBiasGelu = `func.func @main(%x: tensor<8192x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<8192x4096xbf16>, tensor<4096xbf16>) -> tensor<8192x4096xbf16>
  %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  return %2 : tensor<8192x4096xbf16>
}
`

// TestGPUMMBiasGelu (skipped without an sm_90 GPU or cuBLASLt) compiles
// mm_bias_gelu as max-autotune's search does (lower-to-loop once, then
// each configuration) on cuBLASLt (its bias-GELU epilogue) and on
// Strata's staged TMA tilings, checks that every one gives cuBLASLt's
// result (normwise within 1%), and times each in two ways, in turn, twice
// over: as the search does (2 warm-up launches, the median of 10) and as
// the bench's rows do (about 100 ms of launches, the median of 200), so
// that a log shows whether a short search ranks them as the sustained
// row does.
func TestGPUMMBiasGelu(t *testing.T) {
	rt, err := exec.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	if major, minor := rt.Device().ComputeCapability(); !hopper(major, minor) {
		t.Skipf("compute capability %d.%d: no wgmma tilings", major, minor)
	}
	if err := cublaslt.Load(); err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, mmBiasGelu, ir.ParseOptions{Filename: "mm_bias_gelu.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	runPipeline(t, ctx, m, "lower-to-loop")
	c := &Compiler{Ctx: ctx, Loop: m}
	lib := togpu.DefaultConfig
	lib.CuBLASLt = true
	cfgs := []togpu.Config{lib}
	for _, name := range []string{"128x256x64s4wste", "128x256x64s4wstep132", "128x256x64s4wst"} {
		tile, err := togpu.ParseMMATile(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := togpu.DefaultConfig
		cfg.MMATile = tile
		cfgs = append(cfgs, cfg)
	}
	name := func(cfg togpu.Config) string {
		if cfg.CuBLASLt {
			return "cublaslt"
		}
		return cfg.MMATile.String()
	}
	progs := make([]*exec.Program, len(cfgs))
	for i, cfg := range cfgs {
		if progs[i], err = c.Compile(cfg); err != nil {
			t.Fatalf("%s: %v", name(cfg), err)
		}
	}
	args := convArgs(t, progs[0], "main", rand.New(rand.NewPCG(1, 2)))
	ref, err := progs[0].Run(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range progs[1:] {
		got, err := p.Run(rt, "main", args)
		if err != nil {
			t.Fatalf("%s: %v", name(cfgs[i+1]), err)
		}
		if e := normwise(t, got[0], ref[0]); !(e <= 0.01) {
			t.Fatalf("%s differs from cuBLASLt: normwise %.3g", name(cfgs[i+1]), e)
		}
	}
	const flops = 2 * 8192 * 4096 * 4096
	for round := range 2 {
		var line []string
		for i, p := range progs {
			short, err := p.RunTimed(rt, "main", args, 2, 10)
			if err != nil {
				t.Fatalf("%s: %v", name(cfgs[i]), err)
			}
			b, err := p.Prepare(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			long, err := b.Time(100, 200)
			if ferr := b.Free(); err == nil {
				err = ferr
			}
			if err != nil {
				t.Fatalf("%s: %v", name(cfgs[i]), err)
			}
			line = append(line, fmt.Sprintf("%s %.4f / %.4f ms (%.0f TFLOP/s sustained)", name(cfgs[i]), short, long, flops/long/1e9))
		}
		t.Logf("round %d, search's timing / sustained: %s", round, strings.Join(line, "; "))
	}
}
