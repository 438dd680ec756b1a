package exec

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestProfileLabels names the device ops of a lowered program as a
// profile does: a bf16 convolution with a ReLU on the library (the
// library call, then the epilogue kernel), and a product on cuBLASLt.
func TestProfileLabels(t *testing.T) {
	const src = `func.func @main(%x: tensor<2x8x6x6xbf16>, %w: tensor<16x8x3x3xbf16>, %a: tensor<32x64xbf16>, %b: tensor<64x16xbf16>) -> (tensor<2x16x6x6xbf16>, tensor<32x16xbf16>) {
  %y = "graph.conv2d"(%x, %w) <{padding = [1, 1], strides = [1, 1], dilations = [1, 1]}> : (tensor<2x8x6x6xbf16>, tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16>
  %r = "graph.relu"(%y) : (tensor<2x16x6x6xbf16>) -> tensor<2x16x6x6xbf16>
  %p = "graph.matmul"(%a, %b) : (tensor<32x64xbf16>, tensor<64x16xbf16>) -> tensor<32x16xbf16>
  return %r, %p : tensor<2x16x6x6xbf16>, tensor<32x16xbf16>
}`
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "profile.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop,convert-loop-to-gpu{conv=cudnn matmul=cublaslt},canonicalize,cse)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := prog.plan("main")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		label, kind string
		bytes       int64
	}
	var got []row
	for _, op := range pl.fn.Region(0).Front().Ops() {
		if !deviceOps[op.Name()] {
			continue
		}
		l, k := profileLabel(op)
		got = append(got, row{l, k, operandBytes(op)})
	}
	if len(got) != 3 {
		t.Fatalf("%d device ops, want 3 (the convolution, its ReLU, the product): %+v", len(got), got)
	}
	conv, relu, mm := got[0], got[1], got[2]
	if conv.kind != "library_conv2d forward" || !strings.HasPrefix(conv.label, "library_conv2d forward stride 1 pad 1: memref<2x8x6x6xbf16>, memref<16x8x3x3xbf16>, memref<2x16x6x6xbf16>") {
		t.Errorf("convolution: %+v", conv)
	}
	// x, w and y, 2 bytes an element.
	if want := int64(2 * (2*8*6*6 + 16*8*3*3 + 2*16*6*6)); conv.bytes != want {
		t.Errorf("convolution: %d bytes, want %d", conv.bytes, want)
	}
	if !strings.HasPrefix(relu.kind, "kernel (") || relu.kind == "kernel (?)" || !strings.HasPrefix(relu.label, "@main_kernel") {
		t.Errorf("epilogue: %+v", relu)
	}
	if mm.kind != gpu.LibraryMatmulOp[len("gpu."):] || !strings.Contains(mm.label, "memref<32x64xbf16>") || mm.bytes != 2*(32*64+64*16+32*16) {
		t.Errorf("product: %+v", mm)
	}
}

// TestFormatProfile checks the profile's tables: kinds summed and sorted,
// shares of the total, the top-n cut and the bandwidth bound.
func TestFormatProfile(t *testing.T) {
	entries := []ProfileEntry{
		{Func: "main", Label: "library_conv2d forward x", Kind: "library_conv2d forward", Bytes: 3e9, Calls: 2, Ms: 6},
		{Func: "main", Label: "@main_kernel_0 (pointwise)", Kind: "kernel (pointwise)", Bytes: 1e6, Calls: 1, Ms: 2},
		{Func: "main", Label: "@main_kernel_1 (pointwise)", Kind: "kernel (pointwise)", Bytes: 1e6, Calls: 1, Ms: 2},
	}
	out := FormatProfile(entries, 2)
	for _, want := range []string{
		"     6.000  60.00      2  library_conv2d forward\n", // the kinds, longest first
		"     4.000  40.00      2  kernel (pointwise)\n",
		"    10.000 total over 3 ops\n",
		"     6.000  60.00      2      1000  @main: library_conv2d forward x\n", // 2 × 3 GB in 6 ms
		"(1 more ops)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "library_conv2d forward\n") > strings.Index(out, "kernel (pointwise)\n") {
		t.Errorf("kinds not longest first:\n%s", out)
	}
	if strings.Contains(FormatProfile(entries, 0), "more ops") {
		t.Error("n = 0 cut the table")
	}
	// Idle time is a kind of its own, in the total, not an op.
	idle := append(entries, ProfileEntry{Func: "main", Label: "idle between ops (waiting for the host)", Kind: IdleKind, Calls: 2, Ms: 10})
	out = FormatProfile(idle, 0)
	for _, want := range []string{"    10.000  50.00      2  idle\n", "    20.000 total over 3 ops (10.000 ms of it idle between them)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// TestProfileNeedsCUDA: a runtime without CUDA refuses to profile,
// stopping a profile that is not running is an error, and so is
// Bound.Profile of no launches.
func TestProfileNeedsCUDA(t *testing.T) {
	rt := newRuntime(newFake())
	if err := rt.StartProfile(); err == nil || !strings.Contains(err.Error(), "needs a CUDA device") {
		t.Errorf("StartProfile on the fake device: %v", err)
	}
	if _, err := rt.StopProfile(); err == nil || !strings.Contains(err.Error(), "no profile is running") {
		t.Errorf("StopProfile without a profile: %v", err)
	}
	// Bound.Profile: no launches is an error, and the fake device's
	// launch runs before the profile is refused.
	p := compileFile(t, "vadd.mlir")
	v := randomF32(t, rand.New(rand.NewPCG(1, 2)), 10, 1)
	b, err := p.Prepare(rt, "main", []interp.Value{v, v})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if _, err := b.Profile(0); err == nil || !strings.Contains(err.Error(), "at least one launch") {
		t.Errorf("Profile(0): %v", err)
	}
	if _, err := b.Profile(2); err == nil || !strings.Contains(err.Error(), "needs a CUDA device") {
		t.Errorf("Profile(2) on the fake device: %v", err)
	}
}
