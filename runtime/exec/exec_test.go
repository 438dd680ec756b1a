package exec

import (
	"embed"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// parse parses IR text into a verified module.
func parse(t testing.TB, name, src string) *ir.Operation {
	t.Helper()
	ctx := dialects.NewContext()
	mod, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: name})
	if err == nil {
		err = ir.Verify(mod)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return mod
}

// testdata holds the test programs inside the test binary, so that GPU
// tests run from any directory on the device machine.
//
//go:embed testdata/*.mlir
var testdata embed.FS

// compileFile compiles a testdata program.
func compileFile(t testing.TB, file string) *Program {
	t.Helper()
	src, err := testdata.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(parse(t, file, string(src)), Options{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return p
}

// randomF32 returns a 1-D f32 buffer of n values uniform in [-lim, lim).
func randomF32(t testing.TB, rng *rand.Rand, n int, lim float64) *interp.Buffer {
	t.Helper()
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = lim * (2*rng.Float64() - 1)
	}
	v, err := interp.FromFloat64s(ir.F32, []int64{int64(n)}, vs)
	if err != nil {
		t.Fatal(err)
	}
	return interp.BufferFromTensor(v)
}

func index(t testing.TB, v int64) *interp.Tensor {
	t.Helper()
	x, err := interp.ScalarInt(ir.Index, v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// case_ is a testdata program with arguments made up from a seed.
type case_ struct {
	file string
	args func(t testing.TB, rng *rand.Rand) []interp.Value
	// rel is the relative tolerance against the interpreter.
	rel float64
}

func matrix(rows, cols int64) func(t testing.TB, rng *rand.Rand) []interp.Value {
	return func(t testing.TB, rng *rand.Rand) []interp.Value {
		return []interp.Value{randomF32(t, rng, int(rows*cols), 4), index(t, rows), index(t, cols)}
	}
}

var cases = []case_{
	{"vadd.mlir", func(t testing.TB, rng *rand.Rand) []interp.Value {
		n := 1000 + rng.IntN(3000)
		return []interp.Value{randomF32(t, rng, n, 1), randomF32(t, rng, n, 1)}
	}, 1e-5},
	{"twokernels.mlir", func(t testing.TB, rng *rand.Rand) []interp.Value {
		n := 1000 + rng.IntN(3000)
		return []interp.Value{randomF32(t, rng, n, 1), randomF32(t, rng, n, 1)}
	}, 1e-5},
	{"rowsum.mlir", matrix(37, 300), 1e-4},
	{"softmax.mlir", matrix(19, 333), 1e-4},
}

// compare checks got against the interpreter's results for the same
// arguments, element by element within rel (relative to the larger of the
// element's magnitude and the row's largest magnitude, so that sums that
// cancel are not held to an impossible bound).
func compare(t *testing.T, p *Program, args []interp.Value, got []interp.Value, rel float64) {
	t.Helper()
	want, err := interp.New(p.Module()).Call("main", args...)
	if err != nil {
		t.Fatalf("interpreter: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := tensor(t, got[i]), tensor(t, want[i])
		if g.ElemType() != w.ElemType() || !equalShape(g.Shape(), w.Shape()) {
			t.Fatalf("result %d: got %s, want %s", i, g, w)
		}
		gs, ws := g.Float64s(), w.Float64s()
		scale := 0.0
		for _, x := range ws {
			scale = max(scale, math.Abs(x))
		}
		bad := 0
		for j := range ws {
			if d := math.Abs(gs[j] - ws[j]); d > rel*max(math.Abs(ws[j]), scale, 1e-30) || math.IsNaN(gs[j]) {
				if bad++; bad <= 5 {
					t.Errorf("result %d[%d] = %g, want %g (diff %g)", i, j, gs[j], ws[j], d)
				}
			}
		}
		if bad > 0 {
			t.Fatalf("result %d: %d of %d elements differ", i, bad, len(ws))
		}
	}
}

func tensor(t *testing.T, v interp.Value) *interp.Tensor {
	t.Helper()
	switch v := v.(type) {
	case *interp.Tensor:
		return v
	case *interp.Buffer:
		x, err := v.Tensor()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	t.Fatalf("unexpected value %v", v)
	return nil
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFakeDeviceMatchesInterpreter runs the testdata programs through the
// whole executor (PTX included) on the fake device, whose kernels are Go
// functions, and compares with the interpreter simulating the same IR.
func TestFakeDeviceMatchesInterpreter(t *testing.T) {
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := compileFile(t, c.file)
			if !strings.Contains(p.PTX()["k"], ".visible .entry") {
				t.Fatalf("no kernel in the PTX:\n%s", p.PTX()["k"])
			}
			rt := newRuntime(newFake())
			args := c.args(t, rand.New(rand.NewPCG(1, 2)))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, c.rel)
			if s := rt.Allocator().Stats(); s.Allocated != 0 {
				t.Errorf("%d bytes still allocated after Run", s.Allocated)
			}
		})
	}
}

// TestLaunchMarshalling checks the launches of vadd.mlir: grid from the
// host's index math, the buffers as device pointers, index as int64, and
// the temporary buffer reused by the second launch of a Bound.
func TestLaunchMarshalling(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	d := newFake()
	rt := newRuntime(d)
	rt.SetLoadPolicy(linkOnce) // a load per text (tiers load twice: tier_test.go)
	rng := rand.New(rand.NewPCG(3, 4))
	b, err := p.Prepare(rt, "main", []interp.Value{randomF32(t, rng, 1000, 1), randomF32(t, rng, 1000, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.launches) != 4 {
		t.Fatalf("%d launches, want 4", len(d.launches))
	}
	l := d.launches[0]
	if l.kernel != "vadd" || l.grid != [3]uint32{4, 1, 1} || l.block != [3]uint32{256, 1, 1} || l.shared != 0 {
		t.Errorf("launch = %+v", l)
	}
	for i := range 3 {
		if _, ok := l.args[i].(DevicePtr); !ok {
			t.Errorf("arg %d is %T, want a device pointer", i, l.args[i])
		}
	}
	if l.args[3] != int64(1000) {
		t.Errorf("n = %v", l.args[3])
	}
	// The second launch's first kernel writes the temporary of the first.
	if d.launches[2].args[2] != d.launches[0].args[2] {
		t.Errorf("temporary not reused: %v then %v", d.launches[0].args[2], d.launches[2].args[2])
	}
	if d.loads != 1 {
		t.Errorf("PTX loaded %d times", d.loads)
	}
	if s := rt.Allocator().Stats(); s.Hits == 0 {
		t.Errorf("allocator never reused a block: %+v", s)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if s := rt.Allocator().Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes allocated after Free", s.Allocated)
	}
	// A second Bound of the same program loads nothing more.
	if _, err := p.Run(rt, "main", []interp.Value{randomF32(t, rng, 10, 1), randomF32(t, rng, 10, 1)}); err != nil {
		t.Fatal(err)
	}
	if d.loads != 1 {
		t.Errorf("PTX loaded %d times", d.loads)
	}
}

// hostOnly evaluates scalar host ops, with no kernels; the interpreter
// runs the same function.
const hostOnly = `
func.func @main(%n: index, %x: f32, %m: memref<?x4xf32>) -> (index, i32, f32, i1, index, f32, index) {
  %c7 = arith.constant 7 : index
  %c2 = arith.constant 2 : index
  %d = arith.ceildivui %n, %c7 : index
  %r = arith.remsi %n, %c7 : index
  %big = arith.maxsi %d, %r : index
  %i = arith.index_cast %big : index to i32
  %f = arith.sitofp %i : i32 to f32
  %h = arith.constant 0.5 : f32
  %y = arith.mulf %f, %x : f32
  %z = arith.addf %y, %h : f32
  %neg = arith.negf %z : f32
  %lt = arith.cmpi ult, %d, %c7 : index
  %s = arith.select %lt, %d, %c7 : index
  %gt = arith.cmpf ogt, %neg, %h : f32
  %dim0 = loop.dim %m, 0 : memref<?x4xf32>
  %dim1 = loop.dim %m, 1 : memref<?x4xf32>
  %rows = arith.muli %dim0, %dim1 : index
  %sh = arith.shli %rows, %c2 : index
  return %s, %i, %neg, %gt, %sh, %h, %rows : index, i32, f32, i1, index, f32, index
}
`

func TestHostOpsMatchInterpreter(t *testing.T) {
	p, err := Compile(parse(t, "host.mlir", hostOnly), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, 1, 13, 50, 1 << 40} {
		x, _ := interp.ScalarFloat(ir.F32, -1.25)
		m, err := interp.NewBuffer(ir.F32, []int64{3, 4})
		if err != nil {
			t.Fatal(err)
		}
		args := []interp.Value{index(t, n), x, m}
		got, err := p.Run(newRuntime(newFake()), "main", args)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, p, args, got, 0)
	}
}

// view reshapes buffers the way loop.view will.
const viewProgram = `
func.func @main(%m: memref<?x8xf32>) -> (memref<?xf32>, index, memref<2x?xf32>) {
  %flat = "loop.view"(%m) : (memref<?x8xf32>) -> memref<?xf32>
  %n = loop.dim %flat, 0 : memref<?xf32>
  %two = "loop.view"(%flat) : (memref<?xf32>) -> memref<2x?xf32>
  return %flat, %n, %two : memref<?xf32>, index, memref<2x?xf32>
}
`

func TestView(t *testing.T) {
	p, err := Compile(parse(t, "view.mlir", viewProgram), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := interp.FromFloat64s(ir.F32, []int64{3, 8}, make([]float64, 24))
	got, err := p.Run(newRuntime(newFake()), "main", []interp.Value{in})
	if err != nil {
		t.Fatal(err)
	}
	if s := got[0].Shape(); !equalShape(s, []int64{24}) {
		t.Errorf("flat shape %v", s)
	}
	if n := tensor(t, got[1]).Int64s()[0]; n != 24 {
		t.Errorf("n = %d", n)
	}
	if s := got[2].Shape(); !equalShape(s, []int64{2, 12}) {
		t.Errorf("2-D shape %v", s)
	}
}

// TestErrors checks located errors: while planning (unsupported ops) and
// while running (bad arguments, deallocating an argument, guards,
// arguments updated in place that are not memrefs of the function).
func TestErrors(t *testing.T) {
	tests := []struct {
		name, src string
		args      func(t *testing.T) []interp.Value
		want      string
	}{
		{"unsupported", `func.func @main(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "loop.for"(%c0, %n, %c1) ({
  ^bb0(%i: index):
    loop.yield
  }) : (index, index, index) -> ()
  return
}`, func(t *testing.T) []interp.Value { return []interp.Value{index(t, 3)} },
			"unsupported:4:3: error: 'loop.for' cannot run on the host of a launch plan"},
		{"dealloc-arg", `func.func @main(%m: memref<4xf32>) {
  loop.dealloc %m : memref<4xf32>
  return
}`, func(t *testing.T) []interp.Value {
			m, _ := interp.NewBuffer(ir.F32, []int64{4})
			return []interp.Value{m}
		}, "dealloc-arg:2:3: error: loop.dealloc of a function argument"},
		{"wrong-arg", `func.func @main(%m: memref<4xf32>) {
  return
}`, func(t *testing.T) []interp.Value {
			m, _ := interp.NewBuffer(ir.F32, []int64{5})
			return []interp.Value{m}
		}, "@main argument 0: expected memref<4xf32>"},
		{"div-zero", `func.func @main(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %d = arith.divui %n, %c0 : index
  return %d : index
}`, func(t *testing.T) []interp.Value { return []interp.Value{index(t, 3)} },
			"div-zero:3:8: error: arith.divui of 3 and 0 is undefined"},
		{"guards", `func.func @main(%m: memref<?xf32>) attributes {graph.guards = ["arg0.rank == 1", "arg0.shape[0] == s0", "s0 >= 8"]} {
  return
}`, func(t *testing.T) []interp.Value {
			m, _ := interp.NewBuffer(ir.F32, []int64{4})
			return []interp.Value{m}
		}, "s0 >= 8"},
		{"updates-range", `func.func @main(%m: memref<4xf32>) attributes {loop.updates_args = array<i64: 1>} {
  return
}`, func(t *testing.T) []interp.Value {
			m, _ := interp.NewBuffer(ir.F32, []int64{4})
			return []interp.Value{m}
		}, "updates-range:1:1: error: @main: loop.updates_args names argument 1 of 1"},
		{"updates-scalar", `func.func @main(%n: index) attributes {loop.updates_args = array<i64: 0>} {
  return
}`, func(t *testing.T) []interp.Value { return []interp.Value{index(t, 3)} },
			"@main: loop.updates_args names argument 0, a index: only memrefs are written in place"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(parse(t, tc.name, tc.src), Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Run(newRuntime(newFake()), "main", tc.args(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	buf := &devBuffer{mem: &allocation{ptr: 0x1000}}
	tests := []struct {
		ty   ir.Type
		v    slotValue
		want any
	}{
		{ir.MemRefOf([]int64{ir.Dynamic}, ir.F32), slotValue{b: buf}, DevicePtr(0x1000)},
		{ir.Index, slotValue{i: -5}, int64(-5)},
		{ir.I64, slotValue{i: 1 << 40}, int64(1 << 40)},
		{ir.I32, slotValue{i: -7}, int32(-7)},
		{ir.I16, slotValue{i: 300}, int16(300)},
		{ir.I8, slotValue{i: -1}, int8(-1)},
		{ir.I1, slotValue{i: 1}, true},
		{ir.F32, slotValue{f: 1.5}, float32(1.5)},
		{ir.F64, slotValue{f: math.Pi}, math.Pi},
		{ir.F16, slotValue{f: 1}, uint16(0x3c00)},
		{ir.BF16, slotValue{f: -2}, uint16(0xc000)},
	}
	for _, tc := range tests {
		k, err := kindOf(tc.ty)
		if err != nil {
			t.Fatalf("%s: %v", tc.ty, err)
		}
		if got := marshal(k, tc.ty, tc.v); got != tc.want {
			t.Errorf("%s (%s): got %#v, want %#v", tc.ty, k, got, tc.want)
		}
	}
	if _, err := kindOf(ir.IntegerOf(4)); err == nil {
		t.Errorf("i4 accepted")
	}
}

// TestEncodeDecode round-trips device storage of every element type.
func TestEncodeDecode(t *testing.T) {
	for _, elem := range []ir.Type{ir.F64, ir.F32, ir.F16, ir.BF16, ir.I64, ir.I32, ir.I16, ir.I8, ir.I1, ir.Index} {
		vs := []int64{0, 1, -1, 5, -3, 1}
		var x *interp.Tensor
		var err error
		if ir.IsFloat(elem) {
			x, err = interp.FromFloat64s(elem, []int64{2, 3}, []float64{0, 1, -1, 5, -3, 0.5})
		} else {
			x, err = interp.FromInt64s(elem, []int64{2, 3}, vs)
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := encode(x)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := elemSize(elem)
		if len(data) != 6*size {
			t.Errorf("%s: %d bytes", elem, len(data))
		}
		y, err := decode(elem, x.Shape(), data)
		if err != nil {
			t.Fatal(err)
		}
		if x.Format() != y.Format() {
			t.Errorf("%s: %s became %s", elem, x.Format(), y.Format())
		}
	}
}

// TestNoGPU checks that Open explains a missing GPU; it runs only where
// there is none.
func TestNoGPU(t *testing.T) {
	rt, err := Open(0)
	if err == nil {
		rt.Close()
		t.Skip("a GPU is present")
	}
	if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "needs an NVIDIA GPU: ") {
		t.Fatalf("err = %v", err)
	}
}
