package fusion_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/decompose"
	"github.com/strata-ir/strata/passes/fusion"
	_ "github.com/strata-ir/strata/passes/lower"
	"github.com/strata-ir/strata/passes/passtest"
)

// fuse runs graph-decompose and graph-fuse with opts on src and returns the
// module and the log.
func fuse(t *testing.T, src string, opts fusion.Options) (*ir.Operation, string) {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	pm, err := passes.Parse("builtin.module(func.func(graph-decompose))")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatalf("decompose: %v", err)
	}
	var log bytes.Buffer
	opts.Log = &log
	var ferr error
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == "func.func" {
			if _, err := fusion.Fuse(ctx, op, opts); err != nil {
				ferr = err
			}
			return false
		}
		return true
	})
	if ferr != nil {
		t.Fatalf("fuse: %v\n%s", ferr, log.String())
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("verify after fusion: %v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
	}
	if err := fusion.Check(m); err != nil {
		t.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
	}
	return m, log.String()
}

// kinds lists the kinds of the fusions of m, in order.
func kinds(m *ir.Operation) []string {
	var out []string
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == "graph.fusion" {
			out = append(out, op.Attr("kind").(ir.StringAttr).Value)
		}
		return true
	})
	return out
}

func fn(args, results, body string) string {
	return "func.func @f(" + args + ") -> (" + results + ") {\n" + body + "\n}\n"
}

// stemPool is ResNet's stem after its convolution, channels last: the
// evaluation batch norm (in f32, rounded once), the ReLU and the 3×3/2
// max pool (padding of -inf, nine strided window slices).
var stemPool = fn("%x: tensor<2x6x6x4xbf16>, %w: tensor<4x3x3x4xbf16>, %s: tensor<4xf32>, %t: tensor<4xf32>", "tensor<2x3x3x4xbf16>", `
  %0 = "graph.conv2d"(%x, %w) <{layout = "NHWC", padding = [1, 1], strides = [1, 1]}> : (tensor<2x6x6x4xbf16>, tensor<4x3x3x4xbf16>) -> tensor<2x6x6x4xbf16>
  %1 = "graph.cast"(%0) : (tensor<2x6x6x4xbf16>) -> tensor<2x6x6x4xf32>
  %sr = "graph.reshape"(%s) <{shape = [1, 1, 1, 4]}> : (tensor<4xf32>) -> tensor<1x1x1x4xf32>
  %tr = "graph.reshape"(%t) <{shape = [1, 1, 1, 4]}> : (tensor<4xf32>) -> tensor<1x1x1x4xf32>
  %2 = "graph.mul"(%1, %sr) : (tensor<2x6x6x4xf32>, tensor<1x1x1x4xf32>) -> tensor<2x6x6x4xf32>
  %3 = "graph.add"(%2, %tr) : (tensor<2x6x6x4xf32>, tensor<1x1x1x4xf32>) -> tensor<2x6x6x4xf32>
  %4 = "graph.cast"(%3) : (tensor<2x6x6x4xf32>) -> tensor<2x6x6x4xbf16>
  %5 = "graph.relu"(%4) : (tensor<2x6x6x4xbf16>) -> tensor<2x6x6x4xbf16>
  %6 = "graph.pad"(%5) <{high = [0, 1, 1, 0], low = [0, 1, 1, 0], value = 0xFF80 : bf16}> : (tensor<2x6x6x4xbf16>) -> tensor<2x8x8x4xbf16>
  %7 = "graph.slice"(%6) <{limits = [2, 5, 5, 4], starts = [0, 0, 0, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %8 = "graph.slice"(%6) <{limits = [2, 5, 6, 4], starts = [0, 0, 1, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %9 = "graph.max"(%7, %8) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  %10 = "graph.slice"(%6) <{limits = [2, 5, 7, 4], starts = [0, 0, 2, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %11 = "graph.max"(%9, %10) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  %12 = "graph.slice"(%6) <{limits = [2, 6, 5, 4], starts = [0, 1, 0, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %13 = "graph.max"(%11, %12) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  %14 = "graph.slice"(%6) <{limits = [2, 6, 6, 4], starts = [0, 1, 1, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %15 = "graph.max"(%13, %14) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  %16 = "graph.slice"(%6) <{limits = [2, 6, 7, 4], starts = [0, 1, 2, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %17 = "graph.max"(%15, %16) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  %18 = "graph.slice"(%6) <{limits = [2, 7, 5, 4], starts = [0, 2, 0, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %19 = "graph.max"(%17, %18) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  %20 = "graph.slice"(%6) <{limits = [2, 7, 6, 4], starts = [0, 2, 1, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %21 = "graph.max"(%19, %20) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  %22 = "graph.slice"(%6) <{limits = [2, 7, 7, 4], starts = [0, 2, 2, 0], strides = [1, 2, 2, 1]}> : (tensor<2x8x8x4xbf16>) -> tensor<2x3x3x4xbf16>
  %23 = "graph.max"(%21, %22) : (tensor<2x3x3x4xbf16>, tensor<2x3x3x4xbf16>) -> tensor<2x3x3x4xbf16>
  return %23 : tensor<2x3x3x4xbf16>`)

// twoWeights convolves twice channels last, each weight an argument stored
// [O, C, KH, KW] and transposed to [O, KH, KW, C] (graph-channels-last's
// entries): the two copies read only arguments and walk one space.
var twoWeights = fn("%x: tensor<2x6x6x4xbf16>, %w1: tensor<4x4x3x3xbf16>, %w2: tensor<4x4x3x3xbf16>", "tensor<2x6x6x4xbf16>", `
  %t1 = "graph.transpose"(%w1) <{perm = [0, 2, 3, 1]}> : (tensor<4x4x3x3xbf16>) -> tensor<4x3x3x4xbf16>
  %0 = "graph.conv2d"(%x, %t1) <{layout = "NHWC", padding = [1, 1], strides = [1, 1]}> : (tensor<2x6x6x4xbf16>, tensor<4x3x3x4xbf16>) -> tensor<2x6x6x4xbf16>
  %1 = "graph.relu"(%0) : (tensor<2x6x6x4xbf16>) -> tensor<2x6x6x4xbf16>
  %t2 = "graph.transpose"(%w2) <{perm = [0, 2, 3, 1]}> : (tensor<4x4x3x3xbf16>) -> tensor<4x3x3x4xbf16>
  %2 = "graph.conv2d"(%1, %t2) <{layout = "NHWC", padding = [1, 1], strides = [1, 1]}> : (tensor<2x6x6x4xbf16>, tensor<4x3x3x4xbf16>) -> tensor<2x6x6x4xbf16>
  return %2 : tensor<2x6x6x4xbf16>`)

var cases = []struct {
	name  string
	src   string
	opts  func(*fusion.Options)
	kinds []string
	log   []string // substrings the log must hold
}{
	{
		name: "pointwise chain with a broadcast operand",
		src: fn("%x: tensor<4x8xf32>, %b: tensor<8xf32>", "tensor<4x8xf16>", `
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "graph.neg"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "graph.cast"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return %3 : tensor<4x8xf16>`),
		kinds: []string{"pointwise"},
		log:   []string{"vertical (pointwise consumer of group 1)"},
	},
	{
		name: "transpose reshape square sum",
		src: fn("%x: tensor<4x8xf32>", "tensor<f32>", `
  %0 = "graph.transpose"(%x) <{perm = [1, 0]}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = "graph.reshape"(%0) <{shape = [32]}> : (tensor<8x4xf32>) -> tensor<32xf32>
  %2 = "graph.mul"(%1, %1) : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %3 = "graph.reduce_sum"(%2) <{axes = [0], keepdims = false}> : (tensor<32xf32>) -> tensor<f32>
  return %3 : tensor<f32>`),
		kinds: []string{"reduction"},
		log:   []string{"prologue"},
	},
	{
		name: "scatter_add keeps a group of its own",
		src: fn("%g: tensor<6x4xbf16>, %i: tensor<6xi64>, %h: tensor<10x4xf32>", "tensor<10x4xf32>", `
  %0 = "graph.cast"(%g) : (tensor<6x4xbf16>) -> tensor<6x4xf32>
  %1 = "graph.scatter_add"(%0, %i) <{axis = 0 : i64, size = 10 : i64}> : (tensor<6x4xf32>, tensor<6xi64>) -> tensor<10x4xf32>
  %2 = "graph.add"(%1, %h) : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return %2 : tensor<10x4xf32>`),
		kinds: []string{"pointwise", "scatter", "pointwise"},
		log:   []string{"a scatter keeps a group of its own", "a scatter_add keeps a group of its own: its sums are whole only after its kernel"},
	},
	{
		name: "softmax",
		src: fn("%x: tensor<2x8xf32>", "tensor<2x8xf32>", `
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>`),
		kinds: []string{"persistent_row"},
	},
	{
		name: "softmax whose row does not fit",
		src: fn("%x: tensor<2x8xf32>", "tensor<2x8xf32>", `
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>`),
		opts:  func(o *fusion.Options) { o.RowLimit = 4 },
		kinds: []string{"reduction", "reduction", "pointwise"},
		log:   []string{"a row of 8 elements exceeds row-limit=4"},
	},
	{
		name: "cross entropy over GPT-2's vocabulary is one row kernel",
		src: fn("%x: tensor<2x50304xbf16>, %h: tensor<2x50304xf32>", "tensor<2xf32>", `
  %0 = "graph.cast"(%x) : (tensor<2x50304xbf16>) -> tensor<2x50304xf32>
  %1 = "graph.logsumexp"(%0) <{axis = 1 : i64}> : (tensor<2x50304xf32>) -> tensor<2xf32>
  %2 = "graph.mul"(%0, %h) : (tensor<2x50304xf32>, tensor<2x50304xf32>) -> tensor<2x50304xf32>
  %3 = "graph.reduce_sum"(%2) <{axes = [1], keepdims = false}> : (tensor<2x50304xf32>) -> tensor<2xf32>
  %4 = "graph.sub"(%1, %3) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %4 : tensor<2xf32>`),
		kinds: []string{"persistent_row"},
	},
	{
		name: "layer_norm",
		src: fn("%x: tensor<3x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>", "tensor<3x16xf32>", `
  %0 = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<3x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>`),
		kinds: []string{"persistent_row"},
		log:   []string{"reduces the same rows"},
	},
	{
		name: "MLP",
		src: fn("%x: tensor<4x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x8xf32>, %b2: tensor<8xf32>", "tensor<4x8xf32>", `
  %0 = "graph.matmul"(%x, %w1) : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %1 = "graph.add"(%0, %b1) : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %2 = "graph.gelu"(%1) : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %3 = "graph.matmul"(%2, %w2) : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
  %4 = "graph.add"(%3, %b2) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>`),
		kinds: []string{"matmul", "matmul"},
		log:   []string{"epilogue (pointwise consumer of the matmul of group 1)", "matmul starts its own group"},
	},
	{
		name: "MLP without epilogues",
		src: fn("%x: tensor<4x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>", "tensor<4x32xf32>", `
  %0 = "graph.matmul"(%x, %w1) : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %1 = "graph.add"(%0, %b1) : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %1 : tensor<4x32xf32>`),
		opts:  func(o *fusion.Options) { o.Epilogue = false },
		kinds: []string{"matmul", "pointwise"},
		log:   []string{"epilogue fusion is off"},
	},
	{
		// GPT-2's projection under matmul-library: the library stores the
		// product, and the bias and residual adds join the next layer
		// norm's row kernel as its prologue (which also stores the new
		// residual) rather than a kernel of their own.
		name: "library matmul epilogue joins the layer norm",
		src: fn("%x: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>, %r: tensor<4x8xbf16>", "tensor<4x8xbf16>, tensor<4x8xf32>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %2 = "graph.add"(%r, %1) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %3 = "graph.cast"(%2) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %4 = "graph.reduce_mean"(%3) <{axes = [1], keepdims = true}> : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %5 = "graph.sub"(%3, %4) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %2, %5 : tensor<4x8xbf16>, tensor<4x8xf32>`),
		opts:  func(o *fusion.Options) { o.MatmulLibrary = true },
		kinds: []string{"matmul", "persistent_row"},
		log:   []string{"the matmul runs on a library (matmul-library)", "prologue"},
	},
	{
		// Horizontal fusion first merges %a with %e (both read %s), a
		// group that now starts early and ends late; %c and %d (both
		// read %g) must then stay apart: %d → %m2 → {%a, %e} → %m1 → %c
		// runs back through it, before %c's position (the cycle a rapid
		// draw of layout's training test found, reduced).
		name: "no horizontal merge through a group spanning the block",
		src: fn("%x: tensor<4x4xbf16>, %y: tensor<4x4xbf16>, %s: tensor<4x4xbf16>, %g: tensor<4x4xbf16>, %w: tensor<4x4xbf16>, %v: tensor<4x4xbf16>", "tensor<4x4xbf16>, tensor<4x4xbf16>", `
  %a = "graph.mul"(%x, %s) : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %m1 = "graph.matmul"(%a, %w) : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %c = "graph.add"(%m1, %g) : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %d = "graph.mul"(%y, %g) : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %m2 = "graph.matmul"(%d, %v) : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %e = "graph.add"(%m2, %s) : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
  return %c, %e : tensor<4x4xbf16>, tensor<4x4xbf16>`),
		opts:  func(o *fusion.Options) { o.MatmulLibrary = true },
		kinds: []string{"pointwise", "matmul", "pointwise", "matmul", "pointwise"},
		log:   []string{"horizontal (siblings reading argument #2)", "a path between them goes through another kernel"},
	},
	{
		// The same with a symbolic M (a graph compiled for every sequence
		// length), which the library plan takes too.
		name: "library matmul of dynamic M epilogue joins the layer norm",
		src: fn("%x: tensor<?x16xbf16, #graph.dims<[s0, 16]>>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>, %r: tensor<?x8xbf16, #graph.dims<[s0, 8]>>", "tensor<?x8xbf16, #graph.dims<[s0, 8]>>, tensor<?x8xf32, #graph.dims<[s0, 8]>>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<?x16xbf16, #graph.dims<[s0, 16]>>, tensor<16x8xbf16>) -> tensor<?x8xbf16, #graph.dims<[s0, 8]>>
  %1 = "graph.add"(%0, %b) : (tensor<?x8xbf16, #graph.dims<[s0, 8]>>, tensor<8xbf16>) -> tensor<?x8xbf16, #graph.dims<[s0, 8]>>
  %2 = "graph.add"(%r, %1) : (tensor<?x8xbf16, #graph.dims<[s0, 8]>>, tensor<?x8xbf16, #graph.dims<[s0, 8]>>) -> tensor<?x8xbf16, #graph.dims<[s0, 8]>>
  %3 = "graph.cast"(%2) : (tensor<?x8xbf16, #graph.dims<[s0, 8]>>) -> tensor<?x8xf32, #graph.dims<[s0, 8]>>
  %4 = "graph.reduce_mean"(%3) <{axes = [1], keepdims = true}> : (tensor<?x8xf32, #graph.dims<[s0, 8]>>) -> tensor<?x1xf32, #graph.dims<[s0, 1]>>
  %5 = "graph.sub"(%3, %4) : (tensor<?x8xf32, #graph.dims<[s0, 8]>>, tensor<?x1xf32, #graph.dims<[s0, 1]>>) -> tensor<?x8xf32, #graph.dims<[s0, 8]>>
  return %2, %5 : tensor<?x8xbf16, #graph.dims<[s0, 8]>>, tensor<?x8xf32, #graph.dims<[s0, 8]>>`),
		opts:  func(o *fusion.Options) { o.MatmulLibrary = true },
		kinds: []string{"matmul", "persistent_row"},
		log:   []string{"the matmul runs on a library (matmul-library)", "prologue"},
	},
	{
		// The same block without the option: the adds and the cast are the
		// matmul's epilogue, which stores the sum in f32 for the row kernel.
		name: "matmul epilogue stores the layer norm's input",
		src: fn("%x: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>, %r: tensor<4x8xbf16>", "tensor<4x8xbf16>, tensor<4x8xf32>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %2 = "graph.add"(%r, %1) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %3 = "graph.cast"(%2) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %4 = "graph.reduce_mean"(%3) <{axes = [1], keepdims = true}> : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %5 = "graph.sub"(%3, %4) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %2, %5 : tensor<4x8xbf16>, tensor<4x8xf32>`),
		kinds: []string{"matmul", "persistent_row"},
		log:   []string{"epilogue (pointwise consumer of the matmul of group 1)"},
	},
	{
		// A library's product is stored anyway: its widening cast, read by
		// a row reduction and a column sum, is copied for each (each widens
		// as it loads) rather than stored in f32 by the first for the other.
		name: "library matmul widened for two reductions",
		src: fn("%x: tensor<4x16xbf16>, %w: tensor<16x8xbf16>", "tensor<4x1xf32>, tensor<8xf32>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %1 = "graph.cast"(%0) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %2 = "graph.reduce_mean"(%1) <{axes = [1], keepdims = true}> : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %3 = "graph.reduce_sum"(%1) <{axes = [0], keepdims = false}> : (tensor<4x8xf32>) -> tensor<8xf32>
  return %2, %3 : tensor<4x1xf32>, tensor<8xf32>`),
		opts:  func(o *fusion.Options) { o.MatmulLibrary = true },
		kinds: []string{"matmul", "reduction", "reduction"},
		log:   []string{"for each of its 2 readers"},
	},
	{
		// A product no library takes (f32: the library plan keeps it on
		// Strata's kernels) keeps its epilogue under matmul-library.
		name: "matmul-library keeps an f32 product's epilogue",
		src: fn("%x: tensor<4x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>", "tensor<4x32xf32>", `
  %0 = "graph.matmul"(%x, %w1) : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %1 = "graph.add"(%0, %b1) : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %1 : tensor<4x32xf32>`),
		opts:  func(o *fusion.Options) { o.MatmulLibrary = true },
		kinds: []string{"matmul"},
		log:   []string{"epilogue (pointwise consumer of the matmul of group 1)"},
	},
	{
		// conv-library: cuDNN stores the convolution, so its batch norm
		// and ReLU join the max pool's kernel (each computed at the
		// window taps that read it) instead of storing the activation.
		name:  "library conv epilogue joins the max pool",
		src:   stemPool,
		opts:  func(o *fusion.Options) { o.ConvLibrary = true },
		kinds: []string{"conv2d", "pointwise"},
		log:   []string{"the convolution runs on a library (conv-library)", "inlined producer group"},
	},
	{
		// Without it the epilogue is the convolution kernel's, and the
		// pool reads the stored activation.
		name:  "conv epilogue before the max pool",
		src:   stemPool,
		kinds: []string{"conv2d", "pointwise"},
		log:   []string{"epilogue (pointwise consumer of the conv2d of group 1)"},
	},
	{
		// A biased convolution is not the library's (cuDNN does not add a
		// bias before the one rounding): it keeps its epilogue.
		name: "conv-library keeps a biased convolution's epilogue",
		src: fn("%x: tensor<2x6x6x4xbf16>, %w: tensor<4x3x3x4xbf16>, %b: tensor<4xbf16>", "tensor<2x6x6x4xbf16>", `
  %0 = "graph.conv2d"(%x, %w, %b) <{layout = "NHWC", padding = [1, 1], strides = [1, 1]}> : (tensor<2x6x6x4xbf16>, tensor<4x3x3x4xbf16>, tensor<4xbf16>) -> tensor<2x6x6x4xbf16>
  %1 = "graph.relu"(%0) : (tensor<2x6x6x4xbf16>) -> tensor<2x6x6x4xbf16>
  return %1 : tensor<2x6x6x4xbf16>`),
		opts:  func(o *fusion.Options) { o.ConvLibrary = true },
		kinds: []string{"conv2d"},
		log:   []string{"epilogue (pointwise consumer of the conv2d of group 1)"},
	},
	{
		// The two weights' copies become one kernel before the first
		// convolution.
		name:  "copies of arguments over one space merge",
		src:   twoWeights,
		kinds: []string{"copy", "conv2d", "conv2d"},
		log:   []string{"groups reading only arguments over one space"},
	},
	{
		name: "attention from primitives",
		src: fn("%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>", "tensor<2x8x4xf32>", `
  %kt = "graph.transpose"(%k) <{perm = [0, 2, 1]}> : (tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %s = "graph.matmul"(%q, %kt) : (tensor<2x8x4xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  %c = "graph.constant"() <{value = dense<0.5> : tensor<f32>}> : () -> tensor<f32>
  %ss = "graph.mul"(%s, %c) : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %p = "graph.softmax"(%ss) <{axis = -1 : i64}> : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o = "graph.matmul"(%p, %v) : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>`),
		kinds: []string{"matmul", "persistent_row", "matmul"},
	},
	{
		name: "attention composite",
		src: fn("%q: tensor<2x8x4xf32>", "tensor<2x8x4xf32>", `
  %o = "graph.attention"(%q, %q, %q) <{causal = true}> : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>`),
		kinds: []string{"matmul", "persistent_row", "matmul"},
	},
	{
		name: "horizontal siblings",
		src: fn("%x: tensor<4x8xf32>", "tensor<4x8xf32>, tensor<4x8xf32>", `
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.log"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>`),
		kinds: []string{"pointwise"},
		log:   []string{"horizontal (siblings reading argument #0)"},
	},
	{
		name: "siblings without horizontal fusion",
		src: fn("%x: tensor<4x8xf32>", "tensor<4x8xf32>, tensor<4x8xf32>", `
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.log"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>`),
		opts:  func(o *fusion.Options) { o.Horizontal = false },
		kinds: []string{"pointwise", "pointwise"},
	},
	{
		name: "sibling reductions of the same rows",
		src: fn("%x: tensor<4x8xf32>", "tensor<4xf32>, tensor<4xf32>", `
  %0 = "graph.reduce_max"(%x) <{axes = [1]}> : (tensor<4x8xf32>) -> tensor<4xf32>
  %1 = "graph.reduce_sum"(%x) <{axes = [1]}> : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>`),
		kinds: []string{"reduction"},
	},
	{
		name: "diamond",
		src: fn("%x: tensor<4x8xf32>", "tensor<4x8xf32>", `
  %a = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = "graph.sin"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = "graph.cos"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = "graph.add"(%b, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>`),
		kinds: []string{"pointwise"},
	},
	{
		name: "cycle risk through a matmul",
		src: fn("%x: tensor<4x4xf32>, %w: tensor<4x4xf32>", "tensor<4x4xf32>", `
  %a = "graph.exp"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = "graph.matmul"(%a, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = "graph.add"(%a, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>`),
		opts:  func(o *fusion.Options) { o.Epilogue = false },
		kinds: []string{"pointwise", "matmul", "pointwise"},
		log:   []string{"fusing would make a cycle"},
	},
	{
		name: "cycle risk resolved by the epilogue",
		src: fn("%x: tensor<4x4xf32>, %w: tensor<4x4xf32>", "tensor<4x4xf32>", `
  %a = "graph.exp"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = "graph.matmul"(%a, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = "graph.add"(%a, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>`),
		kinds: []string{"pointwise", "matmul"},
		log:   []string{"fusing would make a cycle", "epilogue"},
	},
	{
		// Siblings 2 (r1, reading r0 of group 1, and the add) and 3 (r2 and
		// the cmp, read by group 1's select) would feed each other through
		// group 1, whose select comes after both: its first op, r0, does
		// not (a cycle, and an internal error, before the path was seen).
		name: "cycle risk through a group ending later",
		src: fn("%x: tensor<i32>", "tensor<i32>, tensor<i32>", `
  %0 = "graph.reduce_sum"(%x) <{keepdims = false}> : (tensor<i32>) -> tensor<i32>
  %1 = "graph.reduce_sum"(%0) <{keepdims = false}> : (tensor<i32>) -> tensor<i32>
  %2 = "graph.reduce_sum"(%x) <{keepdims = false}> : (tensor<i32>) -> tensor<i32>
  %3 = "graph.cmp"(%x, %2) <{predicate = "eq"}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %4 = "graph.add"(%x, %1) : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %5 = "graph.select"(%3, %x, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
  return %5, %4 : tensor<i32>, tensor<i32>`),
		kinds: []string{"reduction", "reduction", "reduction"},
		log:   []string{"fusing would make a cycle"},
	},
	{
		name: "broadcast producer recomputed",
		src: fn("%x: tensor<4x8xf32>, %b: tensor<8xf16>", "tensor<4x8xf32>", `
  %0 = "graph.cast"(%b) : (tensor<8xf16>) -> tensor<8xf32>
  %1 = "graph.broadcast_to"(%0) <{shape = [4, 8]}> : (tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "graph.mul"(%x, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>`),
		kinds: []string{"pointwise"},
		log:   []string{"recomputed 4 times"},
	},
	{
		name: "reduction over a leading axis",
		src: fn("%x: tensor<4x8xf32>", "tensor<1x8xf32>", `
  %0 = "graph.abs"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.reduce_max"(%0) <{axes = [0], keepdims = true}> : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %2 = "graph.sqrt"(%1) : (tensor<1x8xf32>) -> tensor<1x8xf32>
  return %2 : tensor<1x8xf32>`),
		kinds: []string{"reduction"},
	},
	{
		name: "returned view is a copy",
		src: fn("%x: tensor<4x8xf32>", "tensor<8x4xf32>, tensor<8x4xf32>", `
  %0 = "graph.transpose"(%x) <{perm = [1, 0]}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = "graph.exp"(%0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>`),
		opts:  func(o *fusion.Options) { o.Horizontal = false },
		kinds: []string{"copy", "pointwise"},
		log:   []string{"copy (the view is read by 'func.return'"},
	},
	{
		name: "max-group-ops",
		src: fn("%x: tensor<257x256xf32>", "tensor<257x256xf32>", `
  %0 = "graph.exp"(%x) : (tensor<257x256xf32>) -> tensor<257x256xf32>
  %1 = "graph.exp"(%0) : (tensor<257x256xf32>) -> tensor<257x256xf32>
  %2 = "graph.exp"(%1) : (tensor<257x256xf32>) -> tensor<257x256xf32>
  return %2 : tensor<257x256xf32>`),
		opts:  func(o *fusion.Options) { o.MaxGroupOps = 2 },
		kinds: []string{"pointwise", "pointwise"},
		log:   []string{"max-group-ops=2, at most 2 here"},
	},
	{
		// A pointwise kernel over at most 65536 points is launch-bound:
		// four times max-group-ops ops (an optimizer's small parameters).
		name: "max-group-ops small space",
		src: fn("%x: tensor<256x256xf32>", "tensor<256x256xf32>", `
  %0 = "graph.exp"(%x) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %1 = "graph.exp"(%0) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %2 = "graph.exp"(%1) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %3 = "graph.exp"(%2) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %4 = "graph.exp"(%3) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %5 = "graph.exp"(%4) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %6 = "graph.exp"(%5) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %7 = "graph.exp"(%6) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %8 = "graph.exp"(%7) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  return %8 : tensor<256x256xf32>`),
		opts:  func(o *fusion.Options) { o.MaxGroupOps = 2 },
		kinds: []string{"pointwise", "pointwise"},
		log:   []string{"max-group-ops=2, at most 8 here"},
	},
	{
		// GPT-2's training loss: the bf16 logits are returned (kept for the
		// backward pass), so each reader of their float32 widening widens
		// as it loads; the matmul stores only the bf16 logits.
		name: "widened logits read by reductions",
		src: fn("%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %hot: tensor<8x32xf32>", "tensor<8x32xbf16>, tensor<8xf32>, tensor<8xf32>", `
  %l = "graph.matmul"(%x, %w) : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %f = "graph.cast"(%l) : (tensor<8x32xbf16>) -> tensor<8x32xf32>
  %lse = "graph.logsumexp"(%f) <{axis = -1 : i64}> : (tensor<8x32xf32>) -> tensor<8xf32>
  %p = "graph.mul"(%f, %hot) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %s = "graph.reduce_sum"(%p) <{axes = [1], keepdims = false}> : (tensor<8x32xf32>) -> tensor<8xf32>
  return %l, %lse, %s : tensor<8x32xbf16>, tensor<8xf32>, tensor<8xf32>`),
		opts:  func(o *fusion.Options) { o.RowLimit = 16 },
		kinds: []string{"matmul", "reduction", "reduction", "copy"},
		log:   []string{"for each of its 3 readers", "the matmul result is stored anyway: its readers widen it as they load"},
	},
	{
		name: "widening cast with one pointwise reader stays an epilogue",
		src: fn("%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>", "tensor<8x32xbf16>, tensor<8x32xf32>", `
  %l = "graph.matmul"(%x, %w) : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %f = "graph.cast"(%l) : (tensor<8x32xbf16>) -> tensor<8x32xf32>
  %y = "graph.add"(%f, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %l, %y : tensor<8x32xbf16>, tensor<8x32xf32>`),
		kinds: []string{"matmul"},
		log:   []string{"epilogue (pointwise consumer of the matmul of group 1)"},
	},
	{
		name: "dead op dropped",
		src: fn("%x: tensor<4xf32>", "tensor<4xf32>", `
  %0 = "graph.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "graph.log"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>`),
		kinds: []string{"pointwise"},
		log:   []string{"its result is never read"},
	},
}

func TestGroups(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := fusion.DefaultOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			m, log := fuse(t, c.src, opts)
			if diff := cmp.Diff(c.kinds, kinds(m)); diff != "" {
				t.Errorf("fusion kinds (-want +got):\n%s\n%s\n%s", diff, ir.Sprint(m, ir.PrintOptions{}), log)
			}
			for _, want := range c.log {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
		})
	}
}

// TestCompositeAlone checks that a composite graph-decompose did not
// expand keeps a group of its own.
func TestCompositeAlone(t *testing.T) {
	ctx := dialects.NewContext()
	src := fn("%x: tensor<2x8xf32>", "tensor<2x8xf32>", `
  %0 = "graph.exp"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = "graph.softmax"(%0) <{axis = -1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>`)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	opts := fusion.DefaultOptions()
	opts.Log = &log
	f := m.Region(0).Front().First()
	if _, err := fusion.Fuse(ctx, f, opts); err != nil {
		t.Fatal(err)
	}
	if err := fusion.Check(m); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pointwise", "composite"}, kinds(m)); diff != "" {
		t.Errorf("fusion kinds (-want +got):\n%s\n%s", diff, log.String())
	}
	if !strings.Contains(log.String(), "a composite keeps a group of its own") {
		t.Errorf("log:\n%s", log.String())
	}
}

// TestCheckRejects checks that Check finds each broken invariant.
func TestCheckRejects(t *testing.T) {
	for name, src := range map[string]string{
		"computing op outside": fn("%x: tensor<4xf32>", "tensor<4xf32>", `
  %0 = "graph.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>`),
		"unused result": fn("%x: tensor<4xf32>", "tensor<4xf32>", `
  %0 = "graph.fusion"(%x) <{kind = "pointwise"}> ({
  ^bb0(%a: tensor<4xf32>):
    %1 = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "graph.yield"(%1) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %x : tensor<4xf32>`),
		"no kind": fn("%x: tensor<4xf32>", "tensor<4xf32>", `
  %0 = "graph.fusion"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %1 = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "graph.yield"(%1) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>`),
	} {
		m, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "t.mlir"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fusion.Check(m) == nil {
			t.Errorf("%s: Check accepted it", name)
		}
	}
}

const pipeline = "builtin.module(func.func(graph-decompose,graph-fuse))"

func TestPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, pipeline, passtest.GraphProgram(passtest.Config{}))
}

// TestLibraryEpiloguesPreserveSemantics checks the stem's batch norm,
// ReLU and max pool fused under conv-library (and on random programs
// with both library options) through convert-graph-to-loop: the pool's
// kernel recomputes the epilogue at each tap it reads.
func TestLibraryEpiloguesPreserveSemantics(t *testing.T) {
	const libraries = "builtin.module(func.func(graph-decompose,graph-fuse{matmul-library=true conv-library=true}),convert-graph-to-loop)"
	for seed := range int64(3) {
		for _, src := range []string{stemPool, twoWeights} {
			if err := passtest.CheckSemantics(&passtest.Program{Func: "f", Source: src}, libraries, seed); err != nil {
				t.Fatal(err)
			}
		}
	}
	passtest.PreservesSemantics(t, libraries, passtest.GraphProgram(passtest.Config{}))
}

// TestRewriteErasesInAnyOrder runs graph-fuse on a gradient (a drawn
// CNN's backward pass, from nn's TestModelsRapid) where a reshape that no
// group holds reads a grouped product and is read by grouped ops placed
// before it in the block: erased last to first in one sweep, the reshape
// still had readers when its turn came, and the product was left read
// ("internal error: 'graph.mul' is still read after fusion", session 20).
func TestRewriteErasesInAnyOrder(t *testing.T) {
	src, err := os.ReadFile("testdata/loose_view_order.mlir")
	if err != nil {
		t.Fatal(err)
	}
	for seed := range int64(2) {
		if err := passtest.CheckSemantics(&passtest.Program{Func: "graph0_bwd", Source: string(src)}, pipeline, seed); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIdempotent(t *testing.T) {
	passtest.Idempotent(t, pipeline, passtest.GraphProgram(passtest.Config{}))
}

// TestInvariants checks on random programs that fusion leaves every
// computing op in one fusion and never makes more groups than there are
// computing ops.
func TestInvariants(t *testing.T) {
	gen := passtest.GraphProgram(passtest.Config{})
	decompose, err := passes.Parse("builtin.module(func.func(graph-decompose))")
	if err != nil {
		t.Fatal(err)
	}
	fuse, err := passes.Parse("builtin.module(func.func(graph-fuse))")
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		p := gen.Draw(rt, "program")
		ctx := dialects.NewContext()
		m, err := p.Parse(ctx)
		if err != nil {
			rt.Fatal(err)
		}
		if err := decompose.Run(ctx, m); err != nil {
			rt.Fatal(err)
		}
		computing := 0
		m.Walk(func(op *ir.Operation) bool {
			if strings.HasPrefix(op.Name(), "graph.") && !isFree(op.Name()) {
				computing++
			}
			return true
		})
		if err := fuse.Run(ctx, m); err != nil {
			rt.Fatal(err)
		}
		if err := fusion.Check(m); err != nil {
			rt.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
		}
		if n := len(kinds(m)); n > max(computing, 0)+copies(m) {
			rt.Fatalf("%d groups for %d computing ops", n, computing)
		}
	})
}

// isFree reports whether a graph op is a constant or a view.
func isFree(name string) bool {
	switch strings.TrimPrefix(name, "graph.") {
	case "constant", "iota", "full", "reshape", "transpose", "broadcast_to", "slice":
		return true
	}
	return false
}

// copies counts the copy groups: views that had to be materialized.
func copies(m *ir.Operation) int {
	n := 0
	for _, k := range kinds(m) {
		if k == "copy" {
			n++
		}
	}
	return n
}

// BenchmarkFuse1k fuses a 1000-op function: layers of a pointwise chain, a
// row reduction and a broadcast back, each layer reading the previous.
func BenchmarkFuse1k(b *testing.B) {
	var body strings.Builder
	prev := "%x"
	for i := 0; i < 250; i++ {
		fmt.Fprintf(&body, "  %%e%d = \"graph.exp\"(%s) : (tensor<64x128xf32>) -> tensor<64x128xf32>\n", i, prev)
		fmt.Fprintf(&body, "  %%m%d = \"graph.reduce_max\"(%%e%d) <{axes = [1], keepdims = true}> : (tensor<64x128xf32>) -> tensor<64x1xf32>\n", i, i)
		fmt.Fprintf(&body, "  %%s%d = \"graph.sub\"(%%e%d, %%m%d) : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>\n", i, i, i)
		fmt.Fprintf(&body, "  %%t%d = \"graph.tanh\"(%%s%d) : (tensor<64x128xf32>) -> tensor<64x128xf32>\n", i, i)
		prev = fmt.Sprintf("%%t%d", i)
	}
	src := fn("%x: tensor<64x128xf32>", "tensor<64x128xf32>", body.String()+"  return "+prev+" : tensor<64x128xf32>")
	ctx := dialects.NewContext()
	for b.Loop() {
		b.StopTimer()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{})
		if err != nil {
			b.Fatal(err)
		}
		f := m.Region(0).Front().First()
		b.StartTimer()
		if _, err := fusion.Fuse(ctx, f, fusion.DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
}
