package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
)

// TestPowerOfTwoDivisions checks that a kernel's coordinates divide by a
// static power-of-two extent with shifts and masks (ptxas calls a
// subroutine for 64-bit division even by an immediate power of two) and
// by other extents as before, at both index widths, and that the lowered
// program computes what the graph program computes. (x's offset, the
// row's quotient times 16 plus the column, folds back to the flat index:
// the bias's column is the one remainder left.)
func TestPowerOfTwoDivisions(t *testing.T) {
	for _, tc := range []struct {
		cols       int64
		pipeline   string
		wantShifts bool
	}{
		{16, "lower-to-gpu", true},
		{16, "lower-to-loop,convert-loop-to-gpu{vector=1},canonicalize,cse", true}, // every column, not multiples of 4
		{12, "lower-to-gpu", false},
		{16, "lower-to-loop,convert-loop-to-gpu{index-bits=32},canonicalize,cse", true},
		{12, "lower-to-loop,convert-loop-to-gpu{index-bits=32},canonicalize,cse", false},
	} {
		name := fmt.Sprintf("%d/%s", tc.cols, tc.pipeline)
		src := fmt.Sprintf(`func.func @main(%%x: tensor<3x%[1]dxf32>, %%b: tensor<%[1]dxf32>) -> tensor<3x%[1]dxf32> {
  %%0 = "graph.add"(%%x, %%b) : (tensor<3x%[1]dxf32>, tensor<%[1]dxf32>) -> tensor<3x%[1]dxf32>
  %%r = "graph.exp"(%%0) : (tensor<3x%[1]dxf32>) -> tensor<3x%[1]dxf32>
  return %%r : tensor<3x%[1]dxf32>
}`, tc.cols)
		m := lowerGraph(t, src, "builtin.module("+tc.pipeline+")")
		ops := countKernelOps(m)
		divs := ops["arith.divui"] + ops["arith.remui"]
		shifts := ops["arith.shrui"] + ops["arith.andi"]
		if tc.wantShifts && (divs != 0 || shifts < 1) || !tc.wantShifts && (divs < 1 || shifts != 0) {
			t.Errorf("%s: %d divisions and remainders, %d shifts and masks in the kernel", name, divs, shifts)
		}
		checkAgainstGraph(t, name, src, m)
	}
}

// TestBroadcastLoadsKeepWideVectors checks that a bf16 nest reading a small
// float32 operand broadcast over its points (a batch norm's per-channel
// scale) takes 8 points a step (16-byte accesses of x and y), as one that
// moves only 16-bit elements does, while a float32 operand over the whole
// space keeps 4; and that both compute what the graph program computes.
func TestBroadcastLoadsKeepWideVectors(t *testing.T) {
	for _, tc := range []struct {
		name, scale string
		want        int64
	}{
		{"broadcast", "tensor<64xf32>", 8},
		{"full", "tensor<4x8x64xf32>", 4},
	} {
		src := fmt.Sprintf(`func.func @main(%%x: tensor<4x8x64xbf16>, %%s: %[1]s) -> tensor<4x8x64xbf16> {
  %%0 = "graph.cast"(%%x) : (tensor<4x8x64xbf16>) -> tensor<4x8x64xf32>
  %%1 = "graph.mul"(%%0, %%s) : (tensor<4x8x64xf32>, %[1]s) -> tensor<4x8x64xf32>
  %%2 = "graph.cast"(%%1) : (tensor<4x8x64xf32>) -> tensor<4x8x64xbf16>
  return %%2 : tensor<4x8x64xbf16>
}`, tc.scale)
		m := lowerGraph(t, src, "builtin.module(lower-to-gpu)")
		vecs := kernelVectors(m)
		if len(vecs) != 1 || vecs[0] != tc.want {
			t.Errorf("%s: kernel vector widths %v, want [%d]", tc.name, vecs, tc.want)
		}
		checkAgainstGraph(t, tc.name, src, m)
	}
}

// TestCopyGathersKeepVectorStores checks that a copy whose loads read
// each lane's element elsewhere (a convolution weight's transpose
// [O, C, KH, KW] → [O, KH, KW, C], which cuDNN's channels-last
// convolutions read) still stores 16 bytes a step, each lane loading its
// own element, while a nest computing with such loads keeps one point a
// step; both compute what the graph program does.
func TestCopyGathersKeepVectorStores(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int64
	}{
		{"copy", `%0 = "graph.transpose"(%w) <{perm = array<i64: 0, 2, 3, 1>}> : (tensor<16x8x3x3xbf16>) -> tensor<16x3x3x8xbf16>
  return %0 : tensor<16x3x3x8xbf16>`, 8},
		// Pixel pairs stacked as channels (space-to-depth, the stem's
		// input) read through a flat buffer: the loads are adjacent
		// only in pairs; the stores still take 16 bytes.
		{"pairs", `%0 = "graph.reshape"(%w) <{shape = array<i64: 16, 4, 9, 2>}> : (tensor<16x8x3x3xbf16>) -> tensor<16x4x9x2xbf16>
  %1 = "graph.transpose"(%0) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<16x4x9x2xbf16>) -> tensor<16x9x4x2xbf16>
  %2 = "graph.reshape"(%1) <{shape = array<i64: 16, 3, 3, 8>}> : (tensor<16x9x4x2xbf16>) -> tensor<16x3x3x8xbf16>
  return %2 : tensor<16x3x3x8xbf16>`, 8},
		{"computed", `%0 = "graph.transpose"(%w) <{perm = array<i64: 0, 2, 3, 1>}> : (tensor<16x8x3x3xbf16>) -> tensor<16x3x3x8xbf16>
  %1 = "graph.mul"(%0, %0) : (tensor<16x3x3x8xbf16>, tensor<16x3x3x8xbf16>) -> tensor<16x3x3x8xbf16>
  return %1 : tensor<16x3x3x8xbf16>`, 1},
	} {
		src := "func.func @main(%w: tensor<16x8x3x3xbf16>) -> tensor<16x3x3x8xbf16> {\n  " + tc.body + "\n}"
		m := lowerGraph(t, src, "builtin.module(lower-to-gpu)")
		vecs := kernelVectors(m)
		if len(vecs) != 1 || vecs[0] != tc.want {
			t.Errorf("%s: kernel vector widths %v, want [%d]", tc.name, vecs, tc.want)
		}
		checkAgainstGraph(t, tc.name, src, m)
	}
}

// TestSmallKernelStoresLast checks that a pointwise kernel over few points
// computing several values (batch norms' scales from their running
// variances) makes all its loads before its first store, so that they may
// be in flight together, and still computes what the graph program does;
// over many points the stores stay where the values are computed.
func TestSmallKernelStoresLast(t *testing.T) {
	for _, tc := range []struct {
		n         int64
		storeLast bool
	}{{64, true}, {1 << 17, false}} {
		v := fmt.Sprintf("tensor<%dxf32>", tc.n)
		// Siblings reading ε: one kernel, each value stored where it
		// is computed.
		src := fmt.Sprintf(`func.func @main(%%a: %[1]s, %%b: %[1]s, %%c: %[1]s, %%e: tensor<f32>) -> (%[1]s, %[1]s, %[1]s) {
  %%0 = "graph.add"(%%a, %%e) : (%[1]s, tensor<f32>) -> %[1]s
  %%1 = "graph.rsqrt"(%%0) : (%[1]s) -> %[1]s
  %%2 = "graph.add"(%%b, %%e) : (%[1]s, tensor<f32>) -> %[1]s
  %%3 = "graph.rsqrt"(%%2) : (%[1]s) -> %[1]s
  %%4 = "graph.add"(%%c, %%e) : (%[1]s, tensor<f32>) -> %[1]s
  %%5 = "graph.rsqrt"(%%4) : (%[1]s) -> %[1]s
  return %%1, %%3, %%5 : %[1]s, %[1]s, %[1]s
}`, v)
		m := lowerGraph(t, src, "builtin.module(lower-to-gpu)")
		var order []string
		m.Walk(func(o *ir.Operation) bool {
			switch o.Name() {
			case "loop.load":
				order = append(order, "L")
			case "loop.store":
				order = append(order, "S")
			}
			return true
		})
		got := strings.Join(order, "")
		last := strings.LastIndex(got, "L") < strings.Index(got, "S")
		if strings.Count(got, "S") < 3 || last != tc.storeLast {
			t.Errorf("%d points: loads and stores %s, want the stores last: %v", tc.n, got, tc.storeLast)
		}
		checkAgainstGraph(t, fmt.Sprint(tc.n), src, m)
	}
}

// TestManyStoresFewerLanes checks that a latency-bound pointwise kernel
// storing many values a point takes fewer lanes, so that the values its
// stores keep live at the end of a step (sinkStores) stay within a
// quarter of a thread's registers (ResNet-50's 16 batch norms' per-channel
// values in one kernel), while a kernel over many points, whose stores
// stay in place, keeps its width; all compute what the graph program
// computes.
func TestManyStoresFewerLanes(t *testing.T) {
	for _, tc := range []struct {
		n, values, want int64
	}{{256, 3, 4}, {256, 20, 2}, {256, 40, 1}, {1 << 17, 40, 4}} {
		v := fmt.Sprintf("tensor<%dxf32>", tc.n)
		var body, results, types []string
		prev := "%a"
		for i := range tc.values {
			body = append(body, fmt.Sprintf(`  %%%d = "graph.add"(%s, %%e) : (%s, tensor<f32>) -> %s`, i, prev, v, v))
			prev = fmt.Sprintf("%%%d", i)
			results, types = append(results, prev), append(types, v)
		}
		src := fmt.Sprintf("func.func @main(%%a: %s, %%e: tensor<f32>) -> (%s) {\n%s\n  return %s : %s\n}",
			v, strings.Join(types, ", "), strings.Join(body, "\n"), strings.Join(results, ", "), strings.Join(types, ", "))
		name := fmt.Sprintf("%d points, %d values", tc.n, tc.values)
		m := lowerGraph(t, src, "builtin.module(lower-to-gpu)")
		vecs := kernelVectors(m)
		if len(vecs) != 1 || vecs[0] != tc.want {
			t.Errorf("%s: kernel vector widths %v, want [%d]", name, vecs, tc.want)
		}
		checkAgainstGraph(t, name, src, m)
	}
}

// TestShortLoadingLoopsRunStraight checks that a pointwise kernel's short
// inner loops that load (a sum over a 3×3 window of a channels-last
// tensor, each thread a channel) are unrolled: no loop but the grid-stride
// one is left, and the kernel computes what the graph program computes.
func TestShortLoadingLoopsRunStraight(t *testing.T) {
	const src = `func.func @main(%x: tensor<2x3x3x64xf32>) -> tensor<2x64xf32> {
  %0 = "graph.reduce_sum"(%x) <{axes = [1, 2], keepdims = false}> : (tensor<2x3x3x64xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}`
	m := lowerGraph(t, src, "builtin.module(lower-to-gpu)")
	ops := countKernelOps(m)
	if ops["loop.for"] != 1 || ops["loop.load"] < 9 {
		t.Errorf("%d loops and %d loads in the kernels, want 1 (the grid-stride loop) and 9 or more", ops["loop.for"], ops["loop.load"])
	}
	checkAgainstGraph(t, "window", src, m)
}

// kernelVectors returns the vector width of each kernel of m, in order.
func kernelVectors(m *ir.Operation) []int64 {
	var vecs []int64
	m.Walk(func(o *ir.Operation) bool {
		if gpu.IsKernel(o) {
			vecs = append(vecs, o.Attr(togpu.LaunchAttr).(ir.DictAttr).Get("vector").(ir.IntegerAttr).Value)
		}
		return true
	})
	return vecs
}
