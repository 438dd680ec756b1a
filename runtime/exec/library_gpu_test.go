package exec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/interp"
)

// libraryProgram lowers a graph function with its matmuls on cuBLASLt.
func libraryProgram(t *testing.T, src string) *Program {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "library.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop,convert-loop-to-gpu{matmul=cublaslt},canonicalize,cse)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ir.Sprint(m, ir.PrintOptions{}), "gpu.library_matmul") {
		t.Fatalf("no gpu.library_matmul in the lowered program")
	}
	p, err := Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// randomHalf returns a bf16 or f16 buffer of the given shape, uniform in
// [-1, 1).
func randomHalf(t *testing.T, rng *rand.Rand, elem ir.Type, shape ...int64) *interp.Buffer {
	t.Helper()
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 2*rng.Float64() - 1
	}
	v, err := interp.FromFloat64s(elem, shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	return interp.BufferFromTensor(v)
}

// TestGPUCuBLASLt runs gpu.library_matmul through cuBLASLt on odd sizes,
// both element types, transposed and batched operands, with and without
// an epilogue kernel, launch by launch and captured in a CUDA graph, and
// compares with the interpreter (the sum in order of k).
func TestGPUCuBLASLt(t *testing.T) {
	rt := openGPU(t)
	rt.WarmLibraries(CuBLASLt) // the handle made in the background, as the bench's engine does
	if err := cublaslt.Load(); err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	path, version, _ := cublaslt.Info()
	t.Logf("cuBLASLt %d from %s", version, path)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	m, k, n := 1+rng.Int64N(300), 1+rng.Int64N(200), 1+rng.Int64N(300)
	b := 1 + rng.Int64N(4)
	cases := []struct {
		name, elem string
		args       [][]int64 // argument shapes
		body       string    // uses %x, %w (and %b), defines %r
		result     []int64
		direct     bool // the library writes the result: no kernel to capture
	}{
		{"bias-gelu", "bf16", [][]int64{{m, k}, {k, n}, {n}}, `
  %0 = "graph.matmul"(%x, %w) : (tensor<MxKxT>, tensor<KxNxT>) -> tensor<MxNxT>
  %1 = "graph.add"(%0, %b) : (tensor<MxNxT>, tensor<NxT>) -> tensor<MxNxT>
  %r = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<MxNxT>) -> tensor<MxNxT>`, []int64{m, n}, false},
		// graph.matmul's bias: cuBLASLt's BIAS epilogue, one rounding.
		{"matmul-bias", "bf16", [][]int64{{m, k}, {k, n}, {n}}, `
  %r = "graph.matmul"(%x, %w, %b) : (tensor<MxKxT>, tensor<KxNxT>, tensor<NxT>) -> tensor<MxNxT>`, []int64{m, n}, true},
		{"matmul-bias-b-transposed-gelu-f16", "f16", [][]int64{{m, k}, {n, k}, {n}}, `
  %tw = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<NxKxT>) -> tensor<KxNxT>
  %0 = "graph.matmul"(%x, %tw, %b) : (tensor<MxKxT>, tensor<KxNxT>, tensor<NxT>) -> tensor<MxNxT>
  %r = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<MxNxT>) -> tensor<MxNxT>`, []int64{m, n}, false},
		{"plain-f16", "f16", [][]int64{{m, k}, {k, n}}, `
  %r = "graph.matmul"(%x, %w) : (tensor<MxKxT>, tensor<KxNxT>) -> tensor<MxNxT>`, []int64{m, n}, true},
		{"a-and-b-transposed", "bf16", [][]int64{{k, m}, {n, k}}, `
  %tx = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<KxMxT>) -> tensor<MxKxT>
  %tw = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<NxKxT>) -> tensor<KxNxT>
  %r = "graph.matmul"(%tx, %tw) : (tensor<MxKxT>, tensor<KxNxT>) -> tensor<MxNxT>`, []int64{m, n}, true},
		{"batched-relu", "bf16", [][]int64{{b, m, k}, {b, k, n}}, `
  %0 = "graph.matmul"(%x, %w) : (tensor<BxMxKxT>, tensor<BxKxNxT>) -> tensor<BxMxNxT>
  %r = "graph.relu"(%0) : (tensor<BxMxNxT>) -> tensor<BxMxNxT>`, []int64{b, m, n}, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/b%d-%dx%dx%d", tc.name, b, m, k, n), func(t *testing.T) {
			sizes := strings.NewReplacer("BxMxKxT", fmt.Sprintf("%dx%dx%dx%s", b, m, k, tc.elem),
				"BxKxNxT", fmt.Sprintf("%dx%dx%dx%s", b, k, n, tc.elem), "BxMxNxT", fmt.Sprintf("%dx%dx%dx%s", b, m, n, tc.elem),
				"MxKxT", fmt.Sprintf("%dx%dx%s", m, k, tc.elem), "KxNxT", fmt.Sprintf("%dx%dx%s", k, n, tc.elem),
				"KxMxT", fmt.Sprintf("%dx%dx%s", k, m, tc.elem), "NxKxT", fmt.Sprintf("%dx%dx%s", n, k, tc.elem),
				"MxNxT", fmt.Sprintf("%dx%dx%s", m, n, tc.elem), "NxT", fmt.Sprintf("%dx%s", n, tc.elem))
			elem := ir.Type(ir.BF16)
			if tc.elem == "f16" {
				elem = ir.F16
			}
			names := []string{"%x", "%w", "%b"}
			var params []string
			var args []interp.Value
			for i, s := range tc.args {
				params = append(params, fmt.Sprintf("%s: %s", names[i], tensorText(s, tc.elem)))
				args = append(args, randomHalf(t, rng, elem, s...))
			}
			res := tensorText(tc.result, tc.elem)
			src := fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", strings.Join(params, ", "), res, sizes.Replace(tc.body), res)
			p := libraryProgram(t, src)
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			// One ulp of the 16-bit result: cuBLASLt sums in another order
			// than the interpreter, which can move the rounded value by one.
			tol := 1.0 / 128
			if elem == ir.F16 {
				tol = 1.0 / 1024
			}
			compare(t, p, args, got, tol)
			r := NewRunner(p, rt, "main", true)
			defer r.Close()
			if got, err = r.Run(args); err != nil {
				t.Fatal(err)
			}
			info, err := r.Graph(args)
			var ce *CaptureError
			switch {
			case errors.As(err, &ce) && tc.direct:
				t.Logf("not captured (expected: no kernel launch): %v", err)
			case err != nil:
				t.Fatalf("capture: %v", err)
			default:
				t.Logf("%v", info)
			}
			compare(t, p, args, got, tol)
		})
	}
}

// TestGPUCuBLASLtTiming logs the bench-size time of mm_bias_gelu's
// product alone and with its bias + gelu epilogue kernel, launch by
// launch: the cost of leaving the epilogue unfused.
func TestGPUCuBLASLtTiming(t *testing.T) {
	rt := openGPU(t)
	if err := cublaslt.Load(); err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 4))
	x, w, b := randomHalf(t, rng, ir.BF16, 8192, 4096), randomHalf(t, rng, ir.BF16, 4096, 4096), randomHalf(t, rng, ir.BF16, 4096)
	for _, tc := range []struct {
		name, body string
		args       []interp.Value
	}{
		{"product", `func.func @main(%x: tensor<8192x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16> {
  %r = "graph.matmul"(%x, %w) : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
  return %r : tensor<8192x4096xbf16>
}`, []interp.Value{x, w}},
		{"product+bias (BIAS epilogue)", `func.func @main(%x: tensor<8192x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %r = "graph.matmul"(%x, %w, %b) : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<8192x4096xbf16>
  return %r : tensor<8192x4096xbf16>
}`, []interp.Value{x, w, b}},
		{"bias-gelu", `func.func @main(%x: tensor<8192x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<8192x4096xbf16>, tensor<4096xbf16>) -> tensor<8192x4096xbf16>
  %r = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  return %r : tensor<8192x4096xbf16>
}`, []interp.Value{x, w, b}},
	} {
		ms, err := libraryProgram(t, tc.body).RunTimed(rt, "main", tc.args, 3, 20)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s 8192×4096×4096 on cuBLASLt: %.4f ms (%.0f TFLOP/s)", tc.name, ms, 2*8192*4096*4096/ms/1e9)
	}
}

// tensorText is the tensor type of a shape and element type name.
func tensorText(shape []int64, elem string) string {
	var b strings.Builder
	b.WriteString("tensor<")
	for _, d := range shape {
		fmt.Fprintf(&b, "%dx", d)
	}
	return b.String() + elem + ">"
}

// TestWarmLibrariesWithoutCUDA checks that a warm-up on a Runtime without
// a CUDA device neither fails nor blocks Close, that it tries the
// libraries asked for only, and that the library op then reports why it
// cannot run.
func TestWarmLibrariesWithoutCUDA(t *testing.T) {
	rt := newRuntime(newFake())
	rt.WarmLibraries(CuDNN)
	rt.libs.warm.Wait()
	if rt.libs.dnnErr == nil || rt.libs.err != nil {
		t.Errorf("warming cuDNN: cuDNN's handle error %v (want it tried), cuBLASLt's %v (want it untried)", rt.libs.dnnErr, rt.libs.err)
	}
	rt.WarmLibraries(LibrariesOf(false, true)...)
	rt.WarmLibraries(CuBLASLt)
	rt.libs.warm.Wait()
	if _, err := rt.cublasLt(); err == nil || !strings.Contains(err.Error(), "needs a CUDA device") {
		t.Errorf("cublasLt after the warm-up: %v", err)
	}
	if _, err := rt.cuDNN(); err == nil || !strings.Contains(err.Error(), "cuDNN needs a CUDA device") {
		t.Errorf("cuDNN without a device: %v", err)
	}
	done := make(chan error)
	go func() { done <- rt.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked after WarmLibraries")
	}
}

// TestGPUWarmLibrariesPrime checks that WarmLibraries makes each library's
// start-up call (primeCalls) once per Runtime, without error, and logs it.
func TestGPUWarmLibrariesPrime(t *testing.T) {
	rt := openGPU(t)
	var out syncBuffer
	logs.Enable(TopicCompile)
	defer logs.SetOutput(logs.SetOutput(&out))
	for range 3 {
		rt.WarmLibraries(CuBLASLt, CuDNN)
	}
	rt.libs.warm.Wait()
	for _, lib := range []Library{CuBLASLt, CuDNN} {
		name := primeCalls[lib].library()
		if err := []error{rt.libs.err, rt.libs.dnnErr}[lib]; err != nil {
			t.Logf("no %s: %v", name, err)
			continue
		}
		if err := rt.libs.primeErr[lib]; err != nil {
			t.Errorf("%s's start-up call: %v", name, err)
		}
		if n := strings.Count(out.String(), name+": start-up call"); n != 1 {
			t.Errorf("%s's start-up call logged %d times, want once:\n%s", name, n, out.String())
		}
	}
}

// TestGPUWarmLibrariesNoPrimeWhenClaimed checks that a library some of
// whose calls are claimed for their warm-ups when its handle is made gets
// no start-up call (those calls pay it), logged, and one whose calls are
// not gets it.
func TestGPUWarmLibrariesNoPrimeWhenClaimed(t *testing.T) {
	rt := openGPU(t)
	var out syncBuffer
	logs.Enable(TopicCompile)
	defer logs.SetOutput(logs.SetOutput(&out))
	rt.libs.claimAll([]libCall{primeCalls[CuBLASLt]})
	rt.WarmLibraries(CuBLASLt, CuDNN)
	rt.libs.warm.Wait()
	if rt.libs.err != nil || rt.libs.dnnErr != nil {
		t.Skipf("no library: %v, %v", rt.libs.err, rt.libs.dnnErr)
	}
	log := out.String()
	if !strings.Contains(log, "cuBLASLt: no start-up call: the program's own calls are due") || strings.Contains(log, "cuBLASLt: start-up call") {
		t.Errorf("cuBLASLt, a call claimed: want no start-up call, logged:\n%s", log)
	}
	if !strings.Contains(log, "cuDNN: start-up call") {
		t.Errorf("cuDNN, no call claimed: want its start-up call:\n%s", log)
	}
}

// syncBuffer is a bytes.Buffer for writers on several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPlanLibraryMatmulCalls checks the library calls a plan lists for
// its products (a transposed B and a bias) and that libCallsIn reads the
// same ones from the IR, as the frontend's early warm-up does.
func TestPlanLibraryMatmulCalls(t *testing.T) {
	p := libraryProgram(t, `func.func @main(%x: tensor<4x24x32xbf16>, %w: tensor<16x32xbf16>, %b: tensor<16xbf16>) -> tensor<4x24x16xbf16> {
  %tw = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<16x32xbf16>) -> tensor<32x16xbf16>
  %r = "graph.matmul"(%x, %tw, %b) : (tensor<4x24x32xbf16>, tensor<32x16xbf16>, tensor<16xbf16>) -> tensor<4x24x16xbf16>
  return %r : tensor<4x24x16xbf16>
}`)
	pl, err := p.plan("main")
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.libCalls) != 1 {
		t.Fatalf("%d library calls, want 1: %+v", len(pl.libCalls), pl.libCalls)
	}
	c := pl.libCalls[0]
	if c.isConv || c.mm.AType != cublaslt.BF16 || c.mm.DType != cublaslt.BF16 || c.mm.M*c.mm.Batch != 96 || c.mm.N != 16 || c.mm.K != 32 ||
		!c.mm.TransB || c.mm.TransA || !c.mm.Bias || c.bytes[3] != 16*2 {
		t.Errorf("library call %+v: want the bf16 product of 96 (or 4·24) rows by 16 columns over 32, B transposed, with a bias", c)
	}
	if got := libCallsIn(p.Module(), "main"); !slices.Equal(got, pl.libCalls) {
		t.Errorf("libCallsIn: %+v, want the plan's %+v", got, pl.libCalls)
	}
}

// TestWarmUpsIdle checks the channel of a quiet device: closed with no
// warm-up in progress, open while one is, closed when it ends, and a
// Runtime's closed before any warm-up.
func TestWarmUpsIdle(t *testing.T) {
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	var g warmGroup
	if !closed(g.idleChan()) {
		t.Fatal("no warm-up in progress, and the idle channel is open")
	}
	g.Add(2)
	c := g.idleChan()
	g.Done()
	if closed(c) || closed(g.idleChan()) {
		t.Fatal("a warm-up in progress, and the idle channel is closed")
	}
	g.Done()
	if !closed(c) || !closed(g.idleChan()) {
		t.Fatal("the warm-ups ended, and the idle channel is open")
	}
	if rt := newRuntime(newFake()); !closed(rt.WarmUpsIdle()) {
		t.Fatal("a new Runtime's WarmUpsIdle is open")
	}
}

// TestWarmGroup checks that warmGroup's Wait returns once the warm-ups in
// progress end, also while others start and end at once on other
// goroutines (run it with -race).
func TestWarmGroup(t *testing.T) {
	var g warmGroup
	g.Wait() // none in progress
	g.Add(1)
	released := make(chan struct{})
	waited := make(chan struct{})
	go func() {
		g.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Wait returned with a warm-up in progress")
	case <-time.After(20 * time.Millisecond):
	}
	go func() {
		<-released
		g.Done()
	}()
	close(released)
	<-waited
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 200 {
				g.Add(1)
				g.Done()
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				g.Wait()
			}
		}()
	}
	wg.Wait()
	g.Wait()
}

// TestLibraryClaims checks the warm-ups' claims: claimAll claims each
// call once (a repeat, or a call claimed already, is left out); a claimed
// call is warming until it is marked warmed, after which it is neither
// warming nor claimed again.
func TestLibraryClaims(t *testing.T) {
	var l libraries
	a := libCall{mm: cublaslt.Matmul{AType: cublaslt.BF16, DType: cublaslt.BF16, M: 64, N: 64, K: 64, Batch: 1}}
	b := libCall{isConv: true, conv: primeCalls[CuDNN].conv, dir: gpu.ConvBackwardData}
	if l.warming(a) {
		t.Fatal("an unclaimed call is warming")
	}
	if got := l.claimAll([]libCall{a, b, a}); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("claimAll(a, b, a) = %v, want a, b", got)
	}
	if !l.warming(a) || !l.warming(b) {
		t.Fatal("claimed calls are not warming")
	}
	if got := l.claimAll([]libCall{b}); len(got) != 0 {
		t.Errorf("a claimed call claimed again: %v", got)
	}
	l.warmed(a)
	if l.warming(a) || !l.warming(b) {
		t.Errorf("after a is warmed: warming a %v (want false), b %v (want true)", l.warming(a), l.warming(b))
	}
	if l.claim(a) {
		t.Error("a warmed call claimed again")
	}
	if !l.claimedAny(false) || !l.claimedAny(true) {
		t.Error("claimedAny: want true for both libraries")
	}
	var none libraries
	if none.claimedAny(true) || none.claimedAny(false) {
		t.Error("claimedAny with nothing claimed: want false")
	}
	l.warmed(a)                                  // again: no change
	l.warmed(libCall{mm: cublaslt.Matmul{M: 1}}) // never claimed: no change
	if n := l.pending.Load(); n != 1 {
		t.Errorf("%d calls pending, want 1 (b)", n)
	}
	l.warmed(b)
	if n := l.pending.Load(); n != 0 || l.warming(b) {
		t.Errorf("after every call is warmed: %d pending, b warming %v", n, l.warming(b))
	}
}
