package interp

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/loop"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

// parseLoop reads and verifies a module in the loop dialect's custom syntax.
func parseLoop(t testing.TB, src string) *ir.Operation {
	t.Helper()
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, arith.Dialect, mathd.Dialect, loop.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err == nil {
		err = ir.Verify(m)
	}
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return m
}

func f32Buffer(t testing.TB, shape []int64, vs ...float64) *Buffer {
	return BufferFromTensor(f32s(t, shape, vs...))
}

// bufferFloats returns b's elements.
func bufferFloats(t testing.TB, v Value) []float64 {
	t.Helper()
	b, ok := v.(*Buffer)
	if !ok {
		t.Fatalf("got %s, want a buffer", v)
	}
	tt, err := b.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	return tt.Float64s()
}

func scalarFloat(t testing.TB, v Value) float64 {
	t.Helper()
	tt, ok := v.(*Tensor)
	if !ok || tt.Len() != 1 {
		t.Fatalf("got %s, want a scalar", v)
	}
	return tt.Float64s()[0]
}

const loopPrograms = `
// out[i, j] = a[i, j] + b[i, j] over a 2-D nest with a dynamic dim.
func.func @add(%a: memref<2x?xf32>, %b: memref<2x?xf32>, %out: memref<2x?xf32>) -> memref<2x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = loop.dim %a, 1 : memref<2x?xf32>
  "loop.parallel"(%c0, %c0, %c2, %n, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %x = loop.load %a[%i, %j] : memref<2x?xf32>
    %y = loop.load %b[%i, %j] : memref<2x?xf32>
    %s = arith.addf %x, %y : f32
    loop.store %s, %out[%i, %j] : memref<2x?xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return %out : memref<2x?xf32>
}

// rows[i] = max_j m[i, j], a parallel reduction nested in a parallel nest,
// into a buffer allocated here with a dynamic size.
func.func @rowmax(%m: memref<?x?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = loop.dim %m, 0 : memref<?x?xf32>
  %c = loop.dim %m, 1 : memref<?x?xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %rows = loop.alloc(%r) : memref<?xf32>
  "loop.parallel"(%c0, %r, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %mx = "loop.parallel"(%c0, %c, %c1, %ninf) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb0(%j: index):
      %x = loop.load %m[%i, %j] : memref<?x?xf32>
      "loop.reduce"(%x) ({
      ^bb0(%l: f32, %rr: f32):
        %t = arith.maximumf %l, %rr : f32
        loop.yield %t : f32
      }) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    loop.store %mx, %rows[%i] : memref<?xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %rows : memref<?xf32>
}

// Sum and count of a[lb], a[lb+step], ... below ub, with two iter args.
func.func @strided(%a: memref<?xf32>, %lb: index, %ub: index, %step: index) -> (f32, index) {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = "loop.for"(%lb, %ub, %step, %z, %c0) ({
  ^bb0(%i: index, %acc: f32, %n: index):
    %x = loop.load %a[%i] : memref<?xf32>
    %s = arith.addf %acc, %x : f32
    %n1 = arith.addi %n, %c1 : index
    loop.yield %s, %n1 : f32, index
  }) : (index, index, index, f32, index) -> (f32, index)
  return %r#0, %r#1 : f32, index
}

// |x| with loop.if, and a store guarded by an if without results.
func.func @abs(%x: f32, %out: memref<1xf32>) -> f32 {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %neg = arith.cmpf olt, %x, %z : f32
  %r = "loop.if"(%neg) ({
    %n = arith.negf %x : f32
    loop.yield %n : f32
  }, {
    loop.yield %x : f32
  }) : (i1) -> f32
  "loop.if"(%neg) ({
    loop.store %x, %out[%c0] : memref<1xf32>
    loop.yield
  }, {
  }) : (i1) -> ()
  return %r : f32
}

func.func @load(%a: memref<?xf32>, %i: index) -> f32 {
  %x = loop.load %a[%i] : memref<?xf32>
  return %x : f32
}

func.func @store(%a: memref<?xf32>, %i: index, %v: f32) {
  loop.store %v, %a[%i] : memref<?xf32>
  return
}

func.func @use_after_free(%n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %a = loop.alloc(%n) : memref<?xf32>
  loop.dealloc %a : memref<?xf32>
  %x = loop.load %a[%c0] : memref<?xf32>
  return %x : f32
}

func.func @double_free(%n: index) {
  %a = loop.alloc(%n) : memref<?xf32>
  loop.dealloc %a : memref<?xf32>
  loop.dealloc %a : memref<?xf32>
  return
}
`

func index(i int64) *Tensor { return indexScalar(i) }

func TestLoopElementwiseAddAliasesOutput(t *testing.T) {
	m := parseLoop(t, loopPrograms)
	a := f32Buffer(t, []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	b := f32Buffer(t, []int64{2, 3}, 10, 20, 30, 40, 50, 60)
	out := f32Buffer(t, []int64{2, 3}, 0, 0, 0, 0, 0, 0)
	res := call(t, m, "add", a, b, out)
	if res[0] != Value(out) {
		t.Errorf("result is not the output buffer: memrefs must alias")
	}
	want := []float64{11, 22, 33, 44, 55, 66}
	if got := bufferFloats(t, out); !slices.Equal(got, want) {
		t.Errorf("out = %v, want %v", got, want)
	}
}

func TestLoopParallelReduce(t *testing.T) {
	m := parseLoop(t, loopPrograms)
	in := f32Buffer(t, []int64{3, 4},
		1, 7, -2, 3,
		-5, -1, -9, -4,
		0, 0, 8, 8)
	res := call(t, m, "rowmax", in)
	if got, want := bufferFloats(t, res[0]), []float64{7, -1, 8}; !slices.Equal(got, want) {
		t.Errorf("rowmax = %v, want %v", got, want)
	}
	// An empty row range reduces to nothing; an empty column range to the init.
	res = call(t, m, "rowmax", f32Buffer(t, []int64{2, 0}))
	if got := bufferFloats(t, res[0]); len(got) != 2 || got[0] > -1e38 || got[1] > -1e38 {
		t.Errorf("rowmax of empty rows = %v, want [-inf -inf]", got)
	}
}

func TestLoopForIterArgs(t *testing.T) {
	m := parseLoop(t, loopPrograms)
	a := f32Buffer(t, []int64{6}, 1, 2, 4, 8, 16, 32)
	for _, tc := range []struct {
		lb, ub, step int64
		sum          float64
		n            int64
	}{
		{0, 6, 1, 63, 6},
		{1, 6, 2, 2 + 8 + 32, 3},
		{1, 5, 2, 2 + 8, 2},
		{3, 3, 1, 0, 0}, // no iteration: the inits
		{4, 2, 1, 0, 0},
	} {
		res := call(t, m, "strided", a, index(tc.lb), index(tc.ub), index(tc.step))
		n, _ := indexValue(res[1])
		if got := scalarFloat(t, res[0]); got != tc.sum || n != tc.n {
			t.Errorf("strided(%d, %d, %d) = %v, %d; want %v, %d", tc.lb, tc.ub, tc.step, got, n, tc.sum, tc.n)
		}
	}
}

func TestLoopIf(t *testing.T) {
	m := parseLoop(t, loopPrograms)
	for _, x := range []float64{-2.5, 3} {
		out := f32Buffer(t, []int64{1}, 7)
		res := call(t, m, "abs", must(ScalarFloat(ir.F32, x)), out)
		if got, want := scalarFloat(t, res[0]), max(x, -x); got != want {
			t.Errorf("abs(%v) = %v, want %v", x, got, want)
		}
		want := 7.0
		if x < 0 {
			want = x
		}
		if got := bufferFloats(t, out)[0]; got != want {
			t.Errorf("abs(%v) stored %v, want %v", x, got, want)
		}
	}
}

func TestLoopErrors(t *testing.T) {
	m := parseLoop(t, loopPrograms)
	// A machine of 4 GiB with 512 MiB free: allocations beyond either fail.
	defer func(p, a func() uint64) { physicalMemory, availableMemory = p, a }(physicalMemory, availableMemory)
	physicalMemory = func() uint64 { return 4 << 30 }
	availableMemory = func() uint64 { return 512 << 20 }
	buf := func() *Buffer { return f32Buffer(t, []int64{4}, 1, 2, 3, 4) }
	one := must(ScalarFloat(ir.F32, 1))
	for _, tc := range []struct {
		fn   string
		args []Value
		want string
	}{
		{"load", []Value{buf(), index(4)}, "t.mlir:80:8: error: 'loop.load' op index 4 is out of bounds for dimension 0 of size 4"},
		{"load", []Value{buf(), index(-1)}, "index -1 is out of bounds for dimension 0 of size 4"},
		{"store", []Value{buf(), index(9), one}, "'loop.store' op index 9 is out of bounds for dimension 0 of size 4"},
		{"use_after_free", []Value{index(3)}, "'loop.load' op use of deallocated buffer"},
		{"double_free", []Value{index(3)}, "'loop.dealloc' op use of deallocated buffer: freed twice"},
		{"strided", []Value{buf(), index(0), index(4), index(0)}, "'loop.for' op step must be positive, got 0"},
		{"load", []Value{f32s(t, []int64{4}, 1, 2, 3, 4), index(0)}, "expected memref<?xf32>, got f32 of shape [4]"},
		{"double_free", []Value{index(1 << 28)}, "t.mlir:98:8: error: 'loop.alloc' op a tensor of shape [268435456] and element type f32 needs 1.0 GiB, more than the 512.0 MiB of memory available"},
		{"double_free", []Value{index(1 << 32)}, "t.mlir:98:8: error: 'loop.alloc' op a tensor of shape [4294967296] and element type f32 needs 16.0 GiB, more than the 4.0 GiB of memory of this machine"},
	} {
		_, err := New(m).Call(tc.fn, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want %q", tc.fn, err, tc.want)
		}
		var d *ir.Diagnostic
		if err != nil && !errors.As(err, &d) {
			t.Errorf("%s: error %v is not located", tc.fn, err)
		}
	}
}

func TestBufferConversions(t *testing.T) {
	src := f32s(t, []int64{2, 2}, 1, 2, 3, 4)
	b := BufferFromTensor(src)
	if err := b.store(0, must(ScalarFloat(ir.F32, 9))); err != nil {
		t.Fatal(err)
	}
	if src.Float64s()[0] != 1 {
		t.Errorf("BufferFromTensor shares the tensor's storage")
	}
	snap, err := b.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store(1, must(ScalarFloat(ir.F32, 8))); err != nil {
		t.Fatal(err)
	}
	if got := snap.Float64s(); !slices.Equal(got, []float64{9, 2, 3, 4}) {
		t.Errorf("Tensor() = %v, want a copy [9 2 3 4]", got)
	}
	if err := b.store(0, must(ScalarFloat(ir.F64, 1))); err == nil {
		t.Errorf("storing an f64 into an f32 buffer succeeded")
	}

	// .npy round trip through a memref type.
	arr, err := ToNPY(b)
	if err != nil {
		t.Fatal(err)
	}
	v, err := FromNPY(arr, ir.MemRefOf([]int64{2, ir.Dynamic}, ir.F32))
	if err != nil {
		t.Fatal(err)
	}
	if got := bufferFloats(t, v); !slices.Equal(got, []float64{9, 8, 3, 4}) {
		t.Errorf("FromNPY(ToNPY(b)) = %v", got)
	}
	if _, err := FromNPY(arr, ir.MemRefOf([]int64{3, 2}, ir.F32)); err == nil {
		t.Errorf("FromNPY accepted a 2x2 array as memref<3x2xf32>")
	}
	if v, err := FromNPY(arr, ir.TensorOf([]int64{2, 2}, ir.F32)); err != nil || func() bool { _, ok := v.(*Tensor); return !ok }() {
		t.Errorf("FromNPY for a tensor type = %v, %v; want a tensor", v, err)
	}
	in, err := RandomInputs(ir.FunctionOf([]ir.Type{ir.MemRefOf([]int64{3}, ir.F32)}, nil), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := in[0].(*Buffer); !ok {
		t.Errorf("RandomInputs for a memref gave %s, want a buffer", in[0])
	}
	if err := b.free(); err != nil {
		t.Fatal(err)
	}
	if _, err := ToNPY(b); err == nil {
		t.Errorf("ToNPY of a freed buffer succeeded")
	}
	if _, err := b.Tensor(); !errors.Is(err, errFreed) {
		t.Errorf("Tensor() of a freed buffer: %v, want %v", err, errFreed)
	}
}

// softmaxSrc is a 256x256 row softmax as convert-graph-to-loop would write
// it: per row, a max reduction, an exp-sum reduction and a normalising
// store, each a loop.parallel.
const softmaxSrc = `
func.func @softmax(%x: memref<256x256xf32>) -> memref<256x256xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 256 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %out = loop.alloc() : memref<256x256xf32>
  "loop.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %mx = "loop.parallel"(%c0, %n, %c1, %ninf) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb0(%j: index):
      %v = loop.load %x[%i, %j] : memref<256x256xf32>
      "loop.reduce"(%v) ({
      ^bb0(%a: f32, %b: f32):
        %m = arith.maximumf %a, %b : f32
        loop.yield %m : f32
      }) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %sum = "loop.parallel"(%c0, %n, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
    ^bb0(%j: index):
      %v = loop.load %x[%i, %j] : memref<256x256xf32>
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      loop.store %e, %out[%i, %j] : memref<256x256xf32>
      "loop.reduce"(%e) ({
      ^bb0(%a: f32, %b: f32):
        %s = arith.addf %a, %b : f32
        loop.yield %s : f32
      }) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "loop.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%j: index):
      %e = loop.load %out[%i, %j] : memref<256x256xf32>
      %q = arith.divf %e, %sum : f32
      loop.store %q, %out[%i, %j] : memref<256x256xf32>
      "loop.reduce"() : () -> ()
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<256x256xf32>
}
`

func TestLoopSoftmax(t *testing.T) {
	m := parseLoop(t, softmaxSrc)
	in, err := RandomInputs(ir.FunctionOf([]ir.Type{ir.MemRefOf([]int64{256, 256}, ir.F32)}, nil), 7)
	if err != nil {
		t.Fatal(err)
	}
	out := bufferFloats(t, call(t, m, "softmax", in...)[0])
	for i := range 256 {
		s := 0.0
		for _, v := range out[i*256 : (i+1)*256] {
			s += v
		}
		if !near(s, 1, 1e-4) {
			t.Fatalf("row %d sums to %v, want 1", i, s)
		}
	}
}

func BenchmarkLoopSoftmax256(b *testing.B) {
	m := parseLoop(b, softmaxSrc)
	in, err := RandomInputs(ir.FunctionOf([]ir.Type{ir.MemRefOf([]int64{256, 256}, ir.F32)}, nil), 7)
	if err != nil {
		b.Fatal(err)
	}
	in2 := New(m)
	for b.Loop() {
		if _, err := in2.Call("softmax", in...); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMaxOpsInLoopBodies: WithMaxOps counts the ops of loop bodies (which
// run on their own fast path, not through exec) and stops a loop of 10^12
// iterations at the limit, located at the op that went past it.
func TestMaxOpsInLoopBodies(t *testing.T) {
	m := parseLoop(t, `func.func @spin() -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000000000000 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %s = "loop.for"(%c0, %n, %c1, %z) ({
  ^bb0(%i: index, %acc: i64):
    %y = arith.addi %acc, %one : i64
    loop.yield %y : i64
  }) : (index, index, index, i64) -> i64
  return %s : i64
}
`)
	in := New(m, WithMaxOps(1000))
	_, err := in.Call("spin")
	if err == nil || !strings.Contains(err.Error(), "t.mlir:9:10: error: 'arith.addi' op: the run went past its limit of 1000 ops") {
		t.Fatalf("err = %v, want the limit reported at the add", err)
	}
	if n := in.OpsRun(); n != 1001 {
		t.Errorf("OpsRun = %d, want 1001 (the limit and the op refused)", n)
	}
}
