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

// mmBias is mm_bias_gelu without the GELU: what the GELU costs each
// kernel.
const mmBias = `func.func @main(%x: tensor<8192x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<8192x4096xbf16>, tensor<4096xbf16>) -> tensor<8192x4096xbf16>
  return %1 : tensor<8192x4096xbf16>
}
`

// mmBiasGeluTanh is mm_bias_gelu with the GELU spelled out in f32 graph
// ops in its tanh form, 0.5·w·(1 + tanh(√(2/π)·(w + 0.044715·w³))), as
// lower-to-loop computed graph.gelu before session 18: the epilogue's
// cost in that form, next to graph.gelu's x/(1 + e^(−2u)).
const mmBiasGeluTanh = `func.func @main(%x: tensor<8192x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<8192x4096xbf16>, tensor<4096xbf16>) -> tensor<8192x4096xbf16>
  %f = "graph.cast"(%1) : (tensor<8192x4096xbf16>) -> tensor<8192x4096xf32>
  %c3 = "graph.full"() <{fill = 0.044715 : f32}> : () -> tensor<f32>
  %c = "graph.full"() <{fill = 0.7978845608028654 : f32}> : () -> tensor<f32>
  %half = "graph.full"() <{fill = 0.5 : f32}> : () -> tensor<f32>
  %one = "graph.full"() <{fill = 1.0 : f32}> : () -> tensor<f32>
  %a = "graph.mul"(%f, %c3) : (tensor<8192x4096xf32>, tensor<f32>) -> tensor<8192x4096xf32>
  %a2 = "graph.mul"(%a, %f) : (tensor<8192x4096xf32>, tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
  %cube = "graph.mul"(%a2, %f) : (tensor<8192x4096xf32>, tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
  %s = "graph.add"(%f, %cube) : (tensor<8192x4096xf32>, tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
  %u = "graph.mul"(%s, %c) : (tensor<8192x4096xf32>, tensor<f32>) -> tensor<8192x4096xf32>
  %t = "graph.tanh"(%u) : (tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
  %t1 = "graph.add"(%t, %one) : (tensor<8192x4096xf32>, tensor<f32>) -> tensor<8192x4096xf32>
  %h = "graph.mul"(%f, %half) : (tensor<8192x4096xf32>, tensor<f32>) -> tensor<8192x4096xf32>
  %r = "graph.mul"(%h, %t1) : (tensor<8192x4096xf32>, tensor<8192x4096xf32>) -> tensor<8192x4096xf32>
  %y = "graph.cast"(%r) : (tensor<8192x4096xf32>) -> tensor<8192x4096xbf16>
  return %y : tensor<8192x4096xbf16>
}
`

// TestGPUMMBiasGelu (skipped without an sm_90 GPU or cuBLASLt) compiles
// mm_bias_gelu as max-autotune's search does (lower-to-loop once, then
// each configuration) on cuBLASLt (the product, then bias and GELU as a
// kernel) and on Strata's TMA tilings (one kernel), checks that every
// one gives cuBLASLt's result (normwise within 1%), and times each in two
// ways, in turn, twice over: as the search does (2 warm-up launches, the
// median of 10) and as the bench's rows do (about 100 ms of launches, the
// median of 200), so that a log shows whether a short search ranks them
// as the sustained row does; then each one's ops under a profile. The
// same for the GELU in its tanh form and for the product with the bias
// alone shows what the GELU costs.
func TestGPUMMBiasGelu(t *testing.T) {
	rt := openRuntime(t)
	if major, minor := rt.Device().ComputeCapability(); !hopper(major, minor) {
		t.Skipf("compute capability %d.%d: no wgmma tilings", major, minor)
	}
	if err := cublaslt.Load(); err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	lib := togpu.DefaultConfig
	lib.CuBLASLt = true
	cfgs := []togpu.Config{lib}
	for _, name := range []string{"128x256x64s4wste", "128x256x64s4wstep132"} {
		tile, err := togpu.ParseMMATile(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := togpu.DefaultConfig
		cfg.MMATile = tile
		cfgs = append(cfgs, cfg)
	}
	for _, src := range []struct{ name, text string }{{"mm_bias_gelu", mmBiasGelu}, {"mm_bias_gelu_tanh_form", mmBiasGeluTanh}, {"mm_bias", mmBias}} {
		t.Run(src.name, func(t *testing.T) { timeGemmConfigs(t, rt, src.text, cfgs) })
	}
}

// timeGemmConfigs compiles the graph program src (a function @main) under
// each of cfgs as the search does, checks each result against the
// first's and logs their times, short and sustained, in turn, twice.
func timeGemmConfigs(t *testing.T, rt *exec.Runtime, src string, cfgs []togpu.Config) {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "gemm.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	runPipeline(t, ctx, m, "lower-to-loop")
	c := &Compiler{Ctx: ctx, Loop: m}
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
			t.Fatalf("%s differs from %s: normwise %.3g", name(cfgs[i+1]), name(cfgs[0]), e)
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
	// Where each one's time goes: the library's product and the epilogue
	// kernel, or the one fused kernel.
	for i, p := range progs {
		b, err := p.Prepare(rt, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		const launches = 20
		entries, err := b.Profile(launches)
		if ferr := b.Free(); err == nil {
			err = ferr
		}
		if err != nil {
			t.Fatalf("%s: %v", name(cfgs[i]), err)
		}
		var ops []string
		for _, e := range entries {
			ops = append(ops, fmt.Sprintf("%s %.4f", e.Label, e.Ms/launches))
		}
		t.Logf("%s profile (ms a launch): %s", name(cfgs[i]), strings.Join(ops, "; "))
	}
}
