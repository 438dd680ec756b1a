package exec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if m, err := ParseMode(""); err != nil || m != ModeDefault {
		t.Errorf(`ParseMode("") = %q, %v`, m, err)
	}
	_, err := ParseMode("fast")
	if err == nil || !strings.Contains(err.Error(), `unknown mode "fast"`) || !strings.Contains(err.Error(), "max-autotune-no-cudagraphs") {
		t.Errorf("ParseMode(fast): %v", err)
	}
	graphs := map[Mode]bool{ModeReduceOverhead: true, ModeMaxAutotune: true}
	tunes := map[Mode]bool{ModeMaxAutotune: true, ModeMaxAutotuneNoCUDAGraphs: true}
	for _, m := range Modes {
		if m.CUDAGraphs() != graphs[m] || m.Autotunes() != tunes[m] {
			t.Errorf("%s: CUDAGraphs %v Autotunes %v", m, m.CUDAGraphs(), m.Autotunes())
		}
	}
}

// TestStaticPool checks that blocks freed during capture serve later
// allocations of the same size and that the pool counts only distinct
// blocks, all returned by release.
func TestStaticPool(t *testing.T) {
	a := cuda.NewAllocator(newFake())
	var p staticPool
	m1, err := p.alloc(a, 4096)
	if err != nil {
		t.Fatal(err)
	}
	p.free(m1)
	m2, _ := p.alloc(a, 4096)
	if m2.ptr != m1.ptr {
		t.Errorf("a freed block of the same size was not reused")
	}
	m3, _ := p.alloc(a, 1000)
	if m3.ptr == m1.ptr {
		t.Errorf("a block in use was handed out again")
	}
	if p.bytes != 5096 {
		t.Errorf("pool %d bytes, want 5096", p.bytes)
	}
	if err := p.release(a); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes still allocated after release", s.Allocated)
	}
}

// TestCaptureFallback checks the reasons a plan is not captured and that
// a Runner with graphs on then runs launch by launch, logging why.
func TestCaptureFallback(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	rng := rand.New(rand.NewPCG(1, 2))
	args := []interp.Value{randomF32(t, rng, 300, 1), randomF32(t, rng, 300, 1)}
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable(TopicCUDAGraphs)
	defer logs.Disable()

	r := NewRunner(p, newRuntime(newFake()), "main", true)
	defer r.Close()
	got, err := r.Run(args)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, p, args, got, 1e-6)
	_, err = r.Graph(args)
	var ce *CaptureError
	if !errors.As(err, &ce) || ce.Reason != "the runtime has no CUDA device" {
		t.Fatalf("Graph: %v, want a CaptureError for want of a device", err)
	}
	if !strings.Contains(buf.String(), "cudagraphs: @main not captured into a CUDA graph: the runtime has no CUDA device; running launch by launch") {
		t.Errorf("log:\n%s", buf.String())
	}

	host, err := Compile(parse(t, "host.mlir", hostOnly), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &Bound{rt: newRuntime(newFake())}
	if b.plan, err = host.plan("main"); err != nil {
		t.Fatal(err)
	}
	if got := b.captureBlocker(); got != "the plan launches no kernel" {
		t.Errorf("blocker of a plan without launches: %q", got)
	}
	b.rt.dev = cudaDevice{&cuda.Device{}} // a device whose driver has no graph entry points
	if b.plan, err = p.plan("main"); err != nil {
		t.Fatal(err)
	}
	if got := b.captureBlocker(); got != cuda.ErrNoGraphs.Error() {
		t.Errorf("blocker without graph entry points: %q", got)
	}
}

// TestRunnerReusesBound runs a Runner twice on one signature and once on
// another: the second call updates the inputs of the first Bound (new
// data, same buffers) and still matches the interpreter.
func TestRunnerReusesBound(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	d := newFake()
	r := NewRunner(p, newRuntime(d), "main", false)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{100, 100, 37} {
		args := []interp.Value{randomF32(t, rng, n, 1), randomF32(t, rng, n, 1)}
		got, err := r.Run(args)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, p, args, got, 1e-6)
	}
	if len(r.bound) != 2 {
		t.Errorf("%d prepared signatures, want 2", len(r.bound))
	}
	if _, err := r.Graph(nil); err == nil || !strings.Contains(err.Error(), "off") {
		t.Errorf("Graph with graphs off: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if s := r.rt.Allocator().Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes allocated after Close", s.Allocated)
	}
}

// TestRunnerRankZeroBuffer runs a Runner on a function whose rank-0
// argument is a memref: calls with other values of it (a decoding step's
// position) reuse one prepared Bound, whose buffer each call updates,
// where a plan would be prepared (and, with graphs on, captured) per
// value if the value keyed the signature as a scalar parameter's does.
func TestRunnerRankZeroBuffer(t *testing.T) {
	p := compileFile(t, "addscalar.mlir")
	d := newFake()
	d.kernels["add_scalar"] = fakeAddScalar
	for _, graphs := range []bool{false, true} {
		r := NewRunner(p, newRuntime(d), "main", graphs)
		rng := rand.New(rand.NewPCG(3, 4))
		a := randomF32(t, rng, 300, 1)
		for _, v := range []float64{1.5, -2.25, 1.5, 7} {
			s, err := interp.FromFloat64s(ir.F32, []int64{}, []float64{v})
			if err != nil {
				t.Fatal(err)
			}
			// A rank-0 Tensor, as the frontend passes it; the
			// interpreter takes a memref argument as a Buffer.
			got, err := r.Run([]interp.Value{a, s})
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, []interp.Value{a, interp.BufferFromTensor(s)}, got, 1e-6)
		}
		if len(r.bound) != 1 {
			t.Errorf("graphs %v: %d prepared signatures for one shape, want 1", graphs, len(r.bound))
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunnerScalarValues runs a Runner on a function with scalar
// parameters: a call with other values of them (the same buffer shape)
// prepares a plan of its own, and a call with the first values again
// reuses the first.
func TestRunnerScalarValues(t *testing.T) {
	p := compileFile(t, "rowsum.mlir")
	r := NewRunner(p, newRuntime(newFake()), "main", false)
	defer r.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, rc := range [][2]int64{{37, 30}, {30, 37}, {37, 30}} {
		args := []interp.Value{randomF32(t, rng, 37*30, 4), index(t, rc[0]), index(t, rc[1])}
		got, err := r.Run(args)
		if err != nil {
			t.Fatalf("%d×%d: %v", rc[0], rc[1], err)
		}
		compare(t, p, args, got, 1e-4)
	}
	if len(r.bound) != 2 {
		t.Errorf("%d prepared signatures, want 2 (one per value of the scalars)", len(r.bound))
	}
}

// fakeAddScalar is add_scalar of addscalar.mlir: c[i] = a[i] + s.
func fakeAddScalar(d *fakeDevice, grid, block [3]uint32, args []any) error {
	n := args[3].(int64)
	a, _, err1 := d.f32s(args[0], n)
	s, _, err2 := d.f32s(args[1], 1)
	c, store, err3 := d.f32s(args[2], n)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	for i := range c {
		c[i] = a[i] + s[0]
	}
	store()
	return nil
}

// TestUpdateChecksShapes refuses new inputs of another shape.
func TestUpdateChecksShapes(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	rng := rand.New(rand.NewPCG(9, 9))
	b, err := p.Prepare(newRuntime(newFake()), "main", []interp.Value{randomF32(t, rng, 10, 1), randomF32(t, rng, 10, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	err = b.Update([]interp.Value{randomF32(t, rng, 11, 1), randomF32(t, rng, 10, 1)})
	if err == nil || !strings.Contains(err.Error(), "does not match the bound") {
		t.Errorf("Update with another shape: %v", err)
	}
}

// TestRunnerReplaysGraph captures a plan on a device that records graphs
// and checks that later calls replay the recording (no kernel launched
// one by one) on each call's new inputs, host values and Arrays alike,
// and match the interpreter.
func TestRunnerReplaysGraph(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	d := newFake()
	d.graphs = true
	rt := newRuntime(d)
	r := NewRunner(p, rt, "main", true)
	rng := rand.New(rand.NewPCG(11, 12))
	for call := range 4 {
		args := []interp.Value{randomF32(t, rng, 300, 1), randomF32(t, rng, 300, 1)}
		if call%2 == 1 {
			arr, err := rt.Upload(args[0])
			if err != nil {
				t.Fatal(err)
			}
			args[0] = arr
		}
		got, err := r.RunDevice(args)
		if err != nil {
			t.Fatal(err)
		}
		host := make([]interp.Value, len(got))
		for i, v := range got {
			tv, err := v.(*Array).Download()
			if err != nil {
				t.Fatal(err)
			}
			host[i] = interp.BufferFromTensor(tv)
		}
		if a, ok := args[0].(*Array); ok {
			tv, err := a.Download()
			if err != nil {
				t.Fatal(err)
			}
			args[0] = interp.BufferFromTensor(tv)
		}
		compare(t, p, args, host, 1e-6)
	}
	info, err := r.Graph([]interp.Value{randomF32(t, rng, 300, 1), randomF32(t, rng, 300, 1)})
	if err != nil || info.Kernels != 2 {
		t.Fatalf("Graph: %v, %v; want vadd.mlir's two kernels captured", info, err)
	}
	if d.replays != 4 {
		t.Errorf("%d replays for 4 calls", d.replays)
	}
	if n := len(d.launches); n != 2+2*4 {
		t.Errorf("%d launches, want 2 plain (before the capture) + 2×4 replayed", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// download returns the elements of a as a Buffer, as the interpreter
// takes and returns memrefs.
func download(t *testing.T, a interp.Value) *interp.Buffer {
	t.Helper()
	tv, err := a.(*Array).Download()
	if err != nil {
		t.Fatal(err)
	}
	return interp.BufferFromTensor(tv)
}

// TestGraphResultsLent checks that the results of a replay are handed out
// in the graph's pool without a copy, that the next replay first moves a
// result still in use to memory of its own (one copy; its elements stay
// the first call's) and lets a released one go (no copy), that a lent
// result passed by reference to a plan without a graph is moved out
// first, and that closing the Runner keeps a lent result readable.
func TestGraphResultsLent(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	d := newFake()
	d.graphs = true
	rt := newRuntime(d)
	r := NewRunner(p, rt, "main", true)
	rng := rand.New(rand.NewPCG(13, 14))
	call := func() ([]interp.Value, interp.Value, Transfers) {
		t.Helper()
		args := []interp.Value{randomF32(t, rng, 300, 1), randomF32(t, rng, 300, 1)}
		before := rt.Transfers()
		res, err := r.RunDevice(args)
		if err != nil {
			t.Fatal(err)
		}
		return args, res[0], rt.Transfers().Sub(before)
	}
	args0, kept, x := call()
	if x.DtoD != 0 {
		t.Errorf("first call: %d device copies, want none (the result is lent)", x.DtoD)
	}
	want0 := download(t, kept)
	compare(t, p, args0, []interp.Value{want0}, 1e-6)

	args1, dropped, x := call()
	if x.DtoD != 1 {
		t.Errorf("second call: %d device copies, want 1 (the kept result moved out)", x.DtoD)
	}
	compare(t, p, args0, []interp.Value{download(t, kept)}, 1e-6)
	compare(t, p, args1, []interp.Value{download(t, dropped)}, 1e-6)
	if err := dropped.(*Array).Release(); err != nil {
		t.Fatal(err)
	}
	args2, lent, x := call()
	if x.DtoD != 0 {
		t.Errorf("third call: %d device copies, want none (the second result was released)", x.DtoD)
	}

	// The lent result, passed by reference to a Runner without graphs
	// (alias), moves out of the pool before that plan reads it: the next
	// replay then leaves it alone.
	plain := NewRunner(p, rt, "main", false)
	defer plain.Close()
	other := randomF32(t, rng, 300, 1)
	out, err := plain.RunDevice([]interp.Value{lent, other})
	if err != nil {
		t.Fatal(err)
	}
	// Hold this result and release it below: dropped unreleased, it would
	// be moved out of the pool at the next replay unless the garbage
	// collector had run its cleanup first, and its copy would count below.
	_, held, x := call()
	if x.DtoD != 0 {
		t.Errorf("after the move: %d device copies, want none", x.DtoD)
	}
	first := download(t, lent)
	compare(t, p, args2, []interp.Value{first}, 1e-6)
	compare(t, p, []interp.Value{first, other}, []interp.Value{download(t, out[0])}, 1e-6)

	_, last, _ := call()
	lastWant, err := last.(*Array).Download()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := last.(*Array).Download(); err != nil || !slices.Equal(got.Bits(), lastWant.Bits()) {
		t.Errorf("a lent result changed when its Runner closed")
	}
	for _, a := range []interp.Value{kept, lent, held, last, out[0]} {
		if err := a.(*Array).Release(); err != nil {
			t.Fatal(err)
		}
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	if s := rt.Allocator().Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes allocated after the Runners closed and the results were released", s.Allocated)
	}
}

// TestRunnerDonation runs a loop that feeds a call's result back as its
// next argument, donated, as a decoding step does with its KV cache: with
// a CUDA graph the twin graphs read the fed-back Array where the previous
// replay wrote it, and nothing is copied out of the pools (no device copy
// a call, where keeping the Array costs one: it moves out of its pool
// before the pool is written again, two calls later); without graphs
// nothing is copied either. The results match the interpreter, a donated Array is
// released and refused afterwards, and no memory is left once the last
// result is released.
func TestRunnerDonation(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	for _, tc := range []struct {
		graphs, donate bool
		copies         [4]int64 // device copies of each call (the first's copy in not counted)
	}{{true, true, [4]int64{}}, {true, false, [4]int64{0, 0, 1, 1}}, {false, true, [4]int64{}}} {
		d := newFake()
		d.graphs = tc.graphs
		rt := newRuntime(d)
		r := NewRunner(p, rt, "main", tc.graphs)
		rng := rand.New(rand.NewPCG(15, 16))
		state, err := rt.Upload(randomF32(t, rng, 300, 1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.RunDeviceDonating([]interp.Value{state}, []bool{true, true}); err == nil || !strings.Contains(err.Error(), "2 donation flags for 1 arguments") {
			t.Errorf("more donation flags than arguments: %v", err)
		}
		var kept []*Array
		for call := range 4 {
			x := randomF32(t, rng, 300, 1)
			before := download(t, state)
			x0 := rt.Transfers()
			res, err := r.RunDeviceDonating([]interp.Value{state, x}, []bool{tc.donate})
			if err != nil {
				t.Fatal(err)
			}
			if n := rt.Transfers().Sub(x0).DtoD; call > 0 && n != tc.copies[call] {
				t.Errorf("graphs %v, donated %v, call %d: %d device copies, want %d", tc.graphs, tc.donate, call, n, tc.copies[call])
			}
			compare(t, p, []interp.Value{before, x}, []interp.Value{download(t, res[0])}, 1e-6)
			if state.Released() != tc.donate {
				t.Errorf("graphs %v, donated %v: argument released %v", tc.graphs, tc.donate, state.Released())
			}
			if tc.donate {
				if _, err := r.RunDevice([]interp.Value{state, x}); !errors.Is(err, errReleased) {
					t.Errorf("graphs %v: a donated Array passed again: %v", tc.graphs, err)
				}
			} else {
				kept = append(kept, state)
			}
			state = res[0].(*Array)
		}
		for _, a := range append(kept, state) {
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if s := rt.Allocator().Stats(); s.Allocated != 0 {
			t.Errorf("graphs %v, donated %v: %d bytes allocated at the end", tc.graphs, tc.donate, s.Allocated)
		}
	}
}

// TestTwinGraphs checks the twin graphs of a fed-back, donated argument:
// the replays alternate between the two twins (each reading the other's
// result in place, no device copy), an argument from elsewhere takes the
// first capture with its copy, and the loop then returns to the twins;
// every result matches the interpreter, and closing the Runner leaves no
// memory once the last result is released.
func TestTwinGraphs(t *testing.T) {
	d := newFake()
	d.graphs = true
	checkTwinGraphs(t, newRuntime(d), 17)
	if d.replays != 9 {
		t.Errorf("%d replays for 9 calls", d.replays)
	}
}

// TestGPUTwinGraphs is TestTwinGraphs on the GPU, on fresh random data.
func TestGPUTwinGraphs(t *testing.T) {
	checkTwinGraphs(t, openGPU(t), uint64(time.Now().UnixNano()))
}

// checkTwinGraphs runs TestTwinGraphs's loop on rt.
func checkTwinGraphs(t *testing.T, rt *Runtime, seed uint64) {
	p := compileFile(t, "vadd.mlir")
	r := NewRunner(p, rt, "main", true)
	rng := rand.New(rand.NewPCG(seed, 18))
	upload := func() *Array {
		a, err := rt.Upload(randomF32(t, rng, 300, 1))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	state := upload()
	var pools []*staticPool
	for call := range 9 {
		foreign := call == 5
		if foreign {
			if err := state.Release(); err != nil {
				t.Fatal(err)
			}
			state = upload()
		}
		x := randomF32(t, rng, 300, 1)
		before := download(t, state)
		x0 := rt.Transfers()
		res, err := r.RunDeviceDonating([]interp.Value{state, x}, []bool{true})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if call == 0 || foreign {
			want = 1 // into the first capture's buffer
		}
		if n := rt.Transfers().Sub(x0).DtoD; n != want {
			t.Errorf("call %d: %d device copies, want %d", call, n, want)
		}
		compare(t, p, []interp.Value{before, x}, []interp.Value{download(t, res[0])}, 1e-6)
		state = res[0].(*Array)
		pools = append(pools, state.st.lender)
	}
	b := r.last.b
	if vg := b.variants; vg == nil || len(vg.list) != 2 || vg.twin == nil || len(vg.failed) != 0 {
		t.Fatalf("variants %+v: want the two twins captured", b.variants)
	}
	a, tb := b.graph.pool, b.variants.twin
	if b.variants.list[0].g.pool != tb || b.variants.list[1].g.pool != a {
		t.Errorf("the twins write pools %p and %p, want the twin pool %p, then the first capture's %p",
			b.variants.list[0].g.pool, b.variants.list[1].g.pool, tb, a)
	}
	// Calls 0 and 5 replay the first capture (pool a); the twins
	// alternate after each: b (its pool), then c (pool a).
	wantPools := []*staticPool{a, tb, a, tb, a, a, tb, a, tb}
	for i := range pools {
		if pools[i] != wantPools[i] {
			t.Errorf("call %d wrote pool %p, want %p (first capture's %p, twin's %p)", i, pools[i], wantPools[i], a, tb)
		}
	}
	if err := state.Release(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if s := rt.Allocator().Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes allocated at the end", s.Allocated)
	}
}

// TestGraphChainInPlace runs a chain of two captured plans as a training
// step runs its passes: a producer whose result is fed back into its next
// call without being donated (an optimizer's state), and a consumer of
// that result which also returns it (a backward pass reading what the
// forward pass saved). From the second call on, the consumer reads the
// producer's result where the replay left it, in place (no device copy
// into its buffers), and the producer reads its own result in place and
// writes the other of its two pools; the consumer's result that is its
// argument shares that Array's memory. Every value matches the
// interpreter, including results kept across later calls, and closing the
// Runners leaves no memory.
func TestGraphChainInPlace(t *testing.T) {
	d := newFake()
	d.graphs = true
	checkGraphChainInPlace(t, newRuntime(d), 19)
}

// TestGPUGraphChainInPlace is TestGraphChainInPlace on the GPU, on fresh
// random data.
func TestGPUGraphChainInPlace(t *testing.T) {
	checkGraphChainInPlace(t, openGPU(t), uint64(time.Now().UnixNano()))
}

// checkGraphChainInPlace runs TestGraphChainInPlace's loop on rt.
func checkGraphChainInPlace(t *testing.T, rt *Runtime, seed uint64) {
	prod, cons := compileFile(t, "vadd.mlir"), compileFile(t, "passthrough.mlir")
	rp, rc := NewRunner(prod, rt, "main", true), NewRunner(cons, rt, "main", true)
	rng := rand.New(rand.NewPCG(seed, 20))
	state, err := rt.Upload(randomF32(t, rng, 300, 1))
	if err != nil {
		t.Fatal(err)
	}
	y := randomF32(t, rng, 300, 1) // the same host value every call: uploaded once
	type kept struct {
		a    *Array
		want *interp.Buffer
	}
	var keep []kept
	for call := range 7 {
		x := randomF32(t, rng, 300, 1)
		before := download(t, state)
		x0 := rt.Transfers()
		res, err := rp.RunDevice([]interp.Value{state, x})
		if err != nil {
			t.Fatal(err)
		}
		compare(t, prod, []interp.Value{before, x}, []interp.Value{download(t, res[0])}, 1e-6)
		// Kept, not released: the producer's next replay into its pool
		// moves it out (one copy), as an optimizer's old state is until
		// the collector finds it.
		keep = append(keep, kept{state, before})
		state = res[0].(*Array)
		x1 := rt.Transfers()
		out, err := rc.RunDevice([]interp.Value{state, y})
		if err != nil {
			t.Fatal(err)
		}
		n := rt.Transfers().Sub(x1).DtoD
		if want := int64(0); call > 0 && n != want {
			t.Errorf("call %d: the consumer made %d device copies, want %d (its argument read in place)", call, n, want)
		}
		cur := download(t, state)
		compare(t, cons, []interp.Value{cur, y}, []interp.Value{download(t, out[0]), download(t, out[1])}, 1e-6)
		if call > 0 && out[1].(*Array).st != state.st {
			t.Errorf("call %d: the consumer's result that is its argument does not share the argument's memory", call)
		}
		// The sum is released (a kept one would move out of the
		// consumer's pool at its next replay); the argument is kept.
		if err := out[0].(*Array).Release(); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, kept{out[1].(*Array), cur})
		if n := rt.Transfers().Sub(x0).DtoD; call > 0 && n > 1 {
			t.Errorf("call %d: %d device copies in the step, want at most 1 (a kept state moved out of the producer's pool)", call, n)
		}
	}
	for i, k := range keep {
		if got := download(t, k.a); !slices.Equal(tensor(t, got).Bits(), tensor(t, k.want).Bits()) {
			t.Errorf("kept value %d changed after later calls", i)
		}
	}
	for _, r := range []*Runner{rp, rc} {
		vg := r.last.b.variants
		if vg == nil || len(vg.list) != 2 || len(vg.failed) != 0 {
			t.Fatalf("variants %+v: want two (the producer's result in either of its pools)", vg)
		}
	}
	for _, k := range append(keep, kept{a: state}) {
		if err := k.a.Release(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*Runner{rp, rc} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s := rt.Allocator().Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes allocated at the end", s.Allocated)
	}
}

// TestTwinPoolOnlyForLargeFeedback: a result fed back into its own graph
// is read in place from a twin pool only when it is at least an eighth of
// the first pool (the twin costs a whole pool); a small one (batch norm's
// running statistics beside activations) is copied into the first
// capture's buffer and no twin is made. Results match the interpreter.
func TestTwinPoolOnlyForLargeFeedback(t *testing.T) {
	p := compileFile(t, "twosizes.mlir")
	for _, tc := range []struct {
		ns, nx int
		twin   bool
	}{{16, 4096, false}, {4096, 16, true}} {
		d := newFake()
		d.graphs = true
		rt := newRuntime(d)
		r := NewRunner(p, rt, "main", true)
		rng := rand.New(rand.NewPCG(21, 22))
		state, err := rt.Upload(randomF32(t, rng, tc.ns, 1))
		if err != nil {
			t.Fatal(err)
		}
		x := randomF32(t, rng, tc.nx, 1)
		for call := range 4 {
			before := download(t, state)
			x0 := rt.Transfers()
			res, err := r.RunDeviceDonating([]interp.Value{state, x}, []bool{true})
			if err != nil {
				t.Fatal(err)
			}
			if n := rt.Transfers().Sub(x0).DtoD; call > 0 && (n == 0) != tc.twin {
				t.Errorf("%d fed back beside %d: call %d made %d device copies", tc.ns, tc.nx, call, n)
			}
			compare(t, p, []interp.Value{before, x}, []interp.Value{download(t, res[0]), download(t, res[1])}, 1e-6)
			state = res[0].(*Array)
			if err := res[1].(*Array).Release(); err != nil {
				t.Fatal(err)
			}
		}
		vg := r.last.b.variants
		if got := vg != nil && vg.twin != nil; got != tc.twin {
			t.Errorf("%d fed back beside %d: twin pool %v, want %v", tc.ns, tc.nx, got, tc.twin)
		}
		if err := state.Release(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if s := rt.Allocator().Stats(); s.Allocated != 0 {
			t.Errorf("%d bytes allocated at the end", s.Allocated)
		}
	}
}

// TestRunnerUpdatesInPlace checks a plan that writes an argument in place
// (loop.UpdatesArgsAttr, update.mlir: acc += x): with and without CUDA
// graphs, a donated accumulator is written where it lies (no device copy
// once the graphs are captured), and one that is not donated keeps its
// value (the plan writes a copy); every result is the sum.
func TestRunnerUpdatesInPlace(t *testing.T) {
	checkUpdatesInPlace(t, func(graphs bool) *Runtime {
		d := newFake()
		d.graphs = graphs
		return newRuntime(d)
	}, 21)
}

// TestGPURunnerUpdatesInPlace is TestRunnerUpdatesInPlace on the GPU (the
// copies of arguments not donated captured into the CUDA graphs), on
// fresh random data.
func TestGPURunnerUpdatesInPlace(t *testing.T) {
	rt := openGPU(t)
	checkUpdatesInPlace(t, func(bool) *Runtime { return rt }, uint64(time.Now().UnixNano()))
}

// checkUpdatesInPlace runs TestRunnerUpdatesInPlace's loops on the
// runtimes newRT makes (with CUDA graphs on or off).
func checkUpdatesInPlace(t *testing.T, newRT func(graphs bool) *Runtime, seed uint64) {
	p := compileFile(t, "update.mlir")
	for _, tc := range []struct{ graphs, donate bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
		rt := newRT(tc.graphs)
		start := rt.Allocator().Stats().Allocated
		r := NewRunner(p, rt, "main", tc.graphs)
		rng := rand.New(rand.NewPCG(seed, 22))
		acc, err := rt.Upload(randomF32(t, rng, 300, 1))
		if err != nil {
			t.Fatal(err)
		}
		var kept []*Array
		var keptVals [][]float64
		for call := range 5 {
			x := randomF32(t, rng, 300, 1)
			before := floats(t, acc)
			x0 := rt.Transfers()
			res, err := r.RunDeviceDonating([]interp.Value{acc, x}, []bool{tc.donate})
			if err != nil {
				t.Fatal(err)
			}
			if n := rt.Transfers().Sub(x0).DtoD; tc.donate && call >= 2 && n != 0 {
				t.Errorf("graphs %v, donated, call %d: %d device copies, want none", tc.graphs, call, n)
			}
			got, xs := floats(t, res[0]), floats(t, x)
			for i := range got {
				if want := float64(float32(before[i] + xs[i])); got[i] != want {
					t.Fatalf("graphs %v, donated %v, call %d: element %d is %v, want %v", tc.graphs, tc.donate, call, i, got[i], want)
				}
			}
			if acc.Released() != tc.donate {
				t.Errorf("graphs %v, donated %v: argument released %v", tc.graphs, tc.donate, acc.Released())
			}
			if !tc.donate {
				kept, keptVals = append(kept, acc), append(keptVals, before)
			}
			acc = res[0].(*Array)
		}
		for k, a := range kept {
			if got := floats(t, a); !slices.Equal(got, keptVals[k]) {
				t.Errorf("graphs %v: the accumulator of call %d changed after it was passed without donation", tc.graphs, k)
			}
		}
		for _, a := range append(kept, acc) {
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if s := rt.Allocator().Stats(); s.Allocated != start {
			t.Errorf("graphs %v, donated %v: %d bytes allocated at the end, %d at the start", tc.graphs, tc.donate, s.Allocated, start)
		}
	}
}

// floats returns the elements of an Array or Buffer.
func floats(t *testing.T, v interp.Value) []float64 {
	t.Helper()
	if a, ok := v.(*Array); ok {
		v = download(t, a)
	}
	tv, err := v.(*interp.Buffer).Tensor()
	if err != nil {
		t.Fatal(err)
	}
	return tv.Float64s()
}
