package exec

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// CopyDtoDAsync copies between blocks of the fake device (at once: the
// fake has no queue), or records the copy on a capturing stream: the
// graph's replays make it (fakeRecordedCopy).
func (d *fakeDevice) CopyDtoDAsync(dst, src DevicePtr, n uint64, st *cuda.Stream) error {
	if st != nil && st == d.capturing {
		d.recorded = append(d.recorded, fakeLaunch{kernel: fakeCopyKernel, args: []any{dst, src, n}})
		return nil
	}
	return d.copyNow(dst, src, n)
}

// fakeCopyKernel names a device copy recorded in a fake graph.
const fakeCopyKernel = "fake.copy"

// fakeRecordedCopy replays a recorded device copy.
func fakeRecordedCopy(d *fakeDevice, _, _ [3]uint32, args []any) error {
	return d.copyNow(args[0].(DevicePtr), args[1].(DevicePtr), args[2].(uint64))
}

// copyNow copies n bytes between blocks of the fake device.
func (d *fakeDevice) copyNow(dst, src DevicePtr, n uint64) error {
	s, err := d.block(src, int(n))
	if err != nil {
		return err
	}
	t, err := d.block(dst, int(n))
	if err != nil {
		return err
	}
	copy(t, s[:n])
	return nil
}

// arrayProgram is vadd.mlir with functions that return an argument and
// one buffer twice.
func arrayProgram(t *testing.T) *Program {
	t.Helper()
	src, err := testdata.ReadFile("testdata/vadd.mlir")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(src))
	s = s[:len(s)-1] + `
  func.func @ident(%a: memref<?xf32>) -> memref<?xf32> {
    return %a : memref<?xf32>
  }
  func.func @twice(%a: memref<?xf32>, %b: memref<?xf32>) -> (memref<?xf32>, memref<?xf32>) {
    %n = loop.dim %a, 0 : memref<?xf32>
    %c = loop.alloc(%n) : memref<?xf32>
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1) args(%a : memref<?xf32>, %b : memref<?xf32>, %c : memref<?xf32>, %n : index)
    return %c, %c : memref<?xf32>, memref<?xf32>
  }
}
`
	p, err := Compile(parse(t, "array.mlir", s), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func f32s(t *testing.T, v interp.Value) []float32 {
	t.Helper()
	a, ok := v.(*Array)
	if !ok {
		t.Fatalf("%v is not an Array", v)
	}
	x, err := a.Download()
	if err != nil {
		t.Fatal(err)
	}
	return interp.Elems[float32](x)
}

// TestArrayChain runs vadd on device-resident inputs and feeds its result
// back: after the first upload nothing crosses between host and device
// until the final read, and the values are the interpreter's.
func TestArrayChain(t *testing.T) {
	p := arrayProgram(t)
	rt := newRuntime(newFake())
	r := NewRunner(p, rt, "main", false)
	rng := rand.New(rand.NewPCG(3, 4))
	ha, hb := randomF32(t, rng, 300, 1), randomF32(t, rng, 300, 1)
	a, err := rt.Upload(ha)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.Upload(hb)
	if err != nil {
		t.Fatal(err)
	}
	if x := rt.Transfers(); x.HtoD != 2 || x.HtoDBytes != 2*300*4 {
		t.Fatalf("two uploads: %v", x)
	}
	before := rt.Transfers()
	x := interp.Value(a)
	for range 3 {
		res, err := r.RunDevice([]interp.Value{x, b})
		if err != nil {
			t.Fatal(err)
		}
		x = res[0]
	}
	if d := rt.Transfers().Sub(before); d != (Transfers{}) {
		t.Errorf("a chain of calls on device arrays copied: %v", d)
	}
	got := f32s(t, x)
	want, wb := interp.Elems[float32](mustTensor(t, ha)), interp.Elems[float32](mustTensor(t, hb))
	for i := range want {
		w := want[i]
		for range 6 { // three calls of (a+b)+b
			w += wb[i]
		}
		if d := got[i] - w; d > 1e-5 || d < -1e-5 {
			t.Fatalf("element %d: %v, want %v", i, got[i], w)
		}
	}
	if d := rt.Transfers().Sub(before); d.DtoH != 1 || d.HtoD != 0 {
		t.Errorf("one read: %v", d)
	}
	// The same host tensor twice is uploaded once (tensors are immutable).
	ta := mustTensor(t, ha)
	before = rt.Transfers()
	for range 2 {
		if _, err := r.RunDevice([]interp.Value{ta, b}); err != nil {
			t.Fatal(err)
		}
	}
	if d := rt.Transfers().Sub(before); d.HtoD != 1 {
		t.Errorf("the same tensor passed twice: %v, want one upload", d)
	}
}

func mustTensor(t *testing.T, b *interp.Buffer) *interp.Tensor {
	t.Helper()
	x, err := b.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestArrayResultsShare checks that results own plan memory without
// copies: an argument returned is the argument's memory, a buffer
// returned twice is shared, and memory is freed with the last Array.
func TestArrayResultsShare(t *testing.T) {
	p := arrayProgram(t)
	rt := newRuntime(newFake())
	rng := rand.New(rand.NewPCG(5, 6))
	a, err := rt.Upload(randomF32(t, rng, 64, 1))
	if err != nil {
		t.Fatal(err)
	}
	id := NewRunner(p, rt, "ident", false)
	res, err := id.RunDevice([]interp.Value{a})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0].(*Array); r.Ptr() != a.Ptr() || r == a {
		t.Errorf("ident: a new Array on the argument's memory expected, got %v at %#x (argument at %#x)", r, r.Ptr(), a.Ptr())
	}
	tw := NewRunner(p, rt, "twice", false)
	res2, err := tw.RunDevice([]interp.Value{a, a})
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := res2[0].(*Array), res2[1].(*Array)
	if r0.Ptr() != r1.Ptr() {
		t.Errorf("twice: results at %#x and %#x, want one buffer", r0.Ptr(), r1.Ptr())
	}
	if x := rt.Transfers(); x.DtoD != 0 {
		t.Errorf("results copied on the device: %v", x)
	}
	used := rt.Allocator().Stats().Allocated
	if err := r0.Release(); err != nil {
		t.Fatal(err)
	}
	if got := rt.Allocator().Stats().Allocated; got != used {
		t.Errorf("released one of two Arrays sharing memory: %d bytes allocated, want %d", got, used)
	}
	if err := r1.Release(); err != nil {
		t.Fatal(err)
	}
	if got := rt.Allocator().Stats().Allocated; got >= used {
		t.Errorf("released both: %d bytes allocated, want less than %d", got, used)
	}
	if err := r1.Release(); err != nil {
		t.Errorf("a second Release: %v", err)
	}
	if _, err := r1.Download(); !errors.Is(err, errReleased) {
		t.Errorf("Download after Release: %v", err)
	}
	if _, err := tw.RunDevice([]interp.Value{r1, a}); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("a released Array as argument: %v", err)
	}
}

// TestArrayManyResultsShare is TestArrayResultsShare at the size of a
// training step's forward pass (more results than Launch and takeResults
// scan for: they mark and map them): 20 buffers each returned twice and
// the first argument, then a run on one of those results as the first
// argument, whose memory the new result shares (an Array's, not the
// plan's own) without a copy.
func TestArrayManyResultsShare(t *testing.T) {
	const bufs = 20
	var b strings.Builder
	b.WriteString("func.func @many(%a: memref<?xf32>, %b: memref<?xf32>) -> (")
	for i := range 2*bufs + 1 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("memref<?xf32>")
	}
	b.WriteString(") {\n  %n = loop.dim %a, 0 : memref<?xf32>\n  %c1 = arith.constant 1 : index\n  %c256 = arith.constant 256 : index\n  %g = arith.ceildivui %n, %c256 : index\n")
	var rets, types []string
	for i := range bufs {
		fmt.Fprintf(&b, "  %%buf%d = loop.alloc(%%n) : memref<?xf32>\n", i)
		fmt.Fprintf(&b, "  gpu.launch_func @k::@vadd blocks in (%%g, %%c1, %%c1) threads in (%%c256, %%c1, %%c1) args(%%a : memref<?xf32>, %%b : memref<?xf32>, %%buf%d : memref<?xf32>, %%n : index)\n", i)
		rets = append(rets, fmt.Sprintf("%%buf%d", i), fmt.Sprintf("%%buf%d", i))
		types = append(types, "memref<?xf32>", "memref<?xf32>")
	}
	rets, types = append(rets, "%a"), append(types, "memref<?xf32>")
	fmt.Fprintf(&b, "  return %s : %s\n}\n", strings.Join(rets, ", "), strings.Join(types, ", "))
	src, err := testdata.ReadFile("testdata/vadd.mlir")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.TrimSpace(string(src))
	p, err := Compile(parse(t, "many.mlir", text[:len(text)-1]+b.String()+"}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(newFake())
	rng := rand.New(rand.NewPCG(7, 8))
	x, err := rt.Upload(randomF32(t, rng, 64, 1))
	if err != nil {
		t.Fatal(err)
	}
	y, err := rt.Upload(randomF32(t, rng, 64, 1))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(p, rt, "many", false)
	check := func(a interp.Value, res []interp.Value) {
		t.Helper()
		for i := range bufs {
			r0, r1 := res[2*i].(*Array), res[2*i+1].(*Array)
			if r0.Ptr() != r1.Ptr() || r0.st != r1.st {
				t.Errorf("buffer %d: results at %#x and %#x, want one store", i, r0.Ptr(), r1.Ptr())
			}
		}
		if last := res[2*bufs].(*Array); last.Ptr() != a.(*Array).Ptr() || last.st != a.(*Array).st {
			t.Errorf("the argument returned: %#x, want the argument's store at %#x", last.Ptr(), a.(*Array).Ptr())
		}
	}
	res, err := r.RunDevice([]interp.Value{x, y})
	if err != nil {
		t.Fatal(err)
	}
	check(x, res)
	// An earlier result (its memory a plan allocation of the first run,
	// now an Array's) as the argument returned.
	res2, err := r.RunDevice([]interp.Value{res[0], y})
	if err != nil {
		t.Fatal(err)
	}
	check(res[0], res2)
	if d := rt.Transfers().DtoD; d != 0 {
		t.Errorf("%d device copies of results", d)
	}
	used := rt.Allocator().Stats().Allocated
	for _, v := range res2[:2*bufs] {
		if err := v.(*Array).Release(); err != nil {
			t.Fatal(err)
		}
	}
	if got := rt.Allocator().Stats().Allocated; got >= used {
		t.Errorf("released the second run's buffers: %d bytes allocated, want less than %d", got, used)
	}
	if got := f32s(t, res2[2*bufs]); len(got) != 64 {
		t.Errorf("the argument returned reads %d elements after the others' release", len(got))
	}
}

// TestArrayCleanup checks that unreachable Arrays return their memory.
func TestArrayCleanup(t *testing.T) {
	p := arrayProgram(t)
	rt := newRuntime(newFake())
	r := NewRunner(p, rt, "main", false)
	rng := rand.New(rand.NewPCG(1, 1))
	a, err := rt.Upload(randomF32(t, rng, 1000, 1))
	if err != nil {
		t.Fatal(err)
	}
	base := rt.Allocator().Stats().Allocated
	// The results are held until counted: a collection during the loop
	// could otherwise free some before the count.
	var kept [][]interp.Value
	for range 10 {
		res, err := r.RunDevice([]interp.Value{a, a})
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, res)
	}
	if got := rt.Allocator().Stats().Allocated; got < base+10*4000 {
		t.Fatalf("%d bytes after ten results kept, want at least %d", got, base+10*4000)
	}
	runtime.KeepAlive(kept) // and unreachable from here
	deadline := time.Now().Add(5 * time.Second)
	for rt.Allocator().Stats().Allocated > base && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := rt.Allocator().Stats().Allocated; got > base {
		t.Errorf("%d bytes allocated after the results became unreachable, want %d", got, base)
	}
	runtime.KeepAlive(a)
}

// TestArrayErrors checks the located errors of misused Arrays.
func TestArrayErrors(t *testing.T) {
	p := arrayProgram(t)
	rt := newRuntime(newFake())
	rng := rand.New(rand.NewPCG(2, 2))
	a, err := rt.Upload(randomF32(t, rng, 8, 1))
	if err != nil {
		t.Fatal(err)
	}
	other := newRuntime(newFake())
	r := NewRunner(p, other, "main", false)
	if _, err := r.RunDevice([]interp.Value{a, a}); err == nil || !strings.Contains(err.Error(), "another runtime") {
		t.Errorf("an Array of another Runtime: %v", err)
	}
	if _, err := rt.Upload(a); err == nil || !strings.Contains(err.Error(), "cannot upload") {
		t.Errorf("uploaded an Array: %v", err)
	}
	// Program.Prepare copies Arrays into its own buffers (device to device).
	b, err := p.Prepare(rt, "main", []interp.Value{a, a})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if b.args[0].b.mem == a.st.mem || rt.Transfers().DtoD != 2 {
		t.Errorf("Prepare without aliasing: argument at the Array's memory, %v", rt.Transfers())
	}
}

// TestLaunchErrorUnwraps checks that a refused launch is located at its
// gpu.launch_func and keeps the driver's error, which after asynchronous
// work is that work's fault.
func TestLaunchErrorUnwraps(t *testing.T) {
	p := arrayProgram(t)
	d := newFake()
	fault := errors.New("fake: an earlier kernel faulted")
	d.kernels["vadd"] = func(*fakeDevice, [3]uint32, [3]uint32, []any) error { return fault }
	rt := newRuntime(d)
	a, err := rt.Upload(randomF32(t, rand.New(rand.NewPCG(1, 2)), 8, 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewRunner(p, rt, "main", false).RunDevice([]interp.Value{a, a})
	var le *LaunchError
	if !errors.As(err, &le) || !errors.Is(err, fault) {
		t.Fatalf("a refused launch: %v, want a *LaunchError wrapping the driver's error", err)
	}
	if s := err.Error(); !strings.Contains(s, "array.mlir:") || !strings.Contains(s, "launching @vadd") {
		t.Errorf("error %q: want it located at the launch in array.mlir", s)
	}
}

// TestZeros checks Runtime.Zeros on the fake device (an upload of zeros)
// and the GPU (set on the device): every element is +0, an odd-sized bf16
// Array included, with the shape asked for.
func TestZeros(t *testing.T) {
	checkZeros(t, newRuntime(newFake()))
}

// TestGPUZeros is TestZeros on the GPU, over memory that held other data.
func TestGPUZeros(t *testing.T) {
	rt := openGPU(t)
	junk, err := rt.Upload(randomF32(t, rand.New(rand.NewPCG(1, 2)), 1<<16, 100))
	if err != nil {
		t.Fatal(err)
	}
	if err := junk.Release(); err != nil {
		t.Fatal(err)
	}
	checkZeros(t, rt)
}

func checkZeros(t *testing.T, rt *Runtime) {
	for _, tc := range []struct {
		elem  ir.Type
		shape []int64
	}{{ir.F32, []int64{256, 64}}, {ir.BF16, []int64{3, 5}}, {ir.F32, []int64{}}} {
		a, err := rt.Zeros(tc.elem, tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		v, err := a.Download()
		if err != nil {
			t.Fatal(err)
		}
		if v.ElemType() != tc.elem || !slices.Equal(v.Shape(), tc.shape) {
			t.Errorf("zeros of %v×%v: got %v", tc.shape, tc.elem, v)
		}
		for i, x := range v.Float64s() {
			if x != 0 || math.Signbit(x) {
				t.Fatalf("zeros of %v×%v: element %d is %g", tc.shape, tc.elem, i, x)
			}
		}
		if err := a.Release(); err != nil {
			t.Fatal(err)
		}
	}
}
