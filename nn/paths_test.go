package nn_test

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/cpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// The model paths of issues #20 and #21 (a user's own CNNs and small
// transformers, of shapes the user picks), checked without a GPU:
//
//   - interp: the interp backend (graph-decompose, canonicalize, cse, then
//     the reference interpreter);
//   - cpu: the cpu backend's lowering (lower-to-loop) and LLVM code run on
//     the host, with no fallback to the interpreter: a graph the backend
//     cannot compile is a failure here, not a warning;
//   - gpu: the nvptx backend's host work for the H200 (frontend.PTXOnly,
//     capability 9.0, the libraries taken to load): its lowered module
//     (flash attention, wgmma and mma kernels, library calls) run in the
//     interpreter, and every PTX text it generated assembled by the
//     offline ptxas (STRATA_PTXAS, or .cache/tools);
//   - device: the nvptx backend itself on the GPU (the kernels, cuBLASLt
//     and cuDNN as the user's program runs them), where there is one;
//     skipped without. On the device machine, run the package's test
//     binary with -paths=device (the other paths need LLVM and run GPU
//     kernels in the interpreter) and again with STRATA_CUDNN=off
//     STRATA_CUBLASLT=off for Strata's own kernels.
//
// Each path's results are compared with a float64 reference: the loops
// of ref_test.go for single layers, the eager float64 model (the
// interpreter op by op, checked against those loops by the layer tests)
// for whole models.

// modelPath is one way of running a compiled model.
type modelPath struct {
	name string
	// backend registers the path's backend (once a process) and returns
	// its name; skip is non-empty when the path cannot run here. For a
	// heavy case in a default run (not testsize.Long) the gpu paths only
	// generate and assemble the PTX: the interpreter runs GPU kernels
	// thread by thread, some 10⁵ multiply-adds a second.
	backend func(heavy bool) (name, skip string)
	// libraries says that the path's bf16 and f16 products and
	// convolutions are library calls, which the interpreter runs at
	// native speed: a half-precision case is heavy only at libraryMACs.
	libraries bool
	// every, when more than 1, runs the path in a default run only on
	// every so many cases (its code generation and ptxas are the slowest
	// part of a case); all of them under testsize.Long.
	every int
	// ran, when set, counts what shows that the path ran (instead of
	// the graphs its backend compiled).
	ran  func() int64
	seen atomic.Int64
}

var modelPaths = []*modelPath{
	{name: "interp", backend: func(bool) (string, string) { return interpBackend() }},
	{name: "cpu", backend: func(bool) (string, string) { return cpuStrictBackend() }},
	{name: "gpu", backend: func(heavy bool) (string, string) { return gpuHostBackend(true, !heavy || testsize.Long()) }, libraries: true},
	{name: "gpu-kernels", backend: func(heavy bool) (string, string) { return gpuHostBackend(false, !heavy || testsize.Long()) }, every: 3},
	{name: "device", backend: func(bool) (string, string) { return deviceBackend() }, ran: gpuDownloads},
}

// pathsFlag restricts the model paths that run (the device machine has
// no LLVM, and runs GPU kernels in the interpreter no faster than this
// one).
var pathsFlag = flag.String("paths", "", "comma-separated model paths to run (interp, cpu, gpu, gpu-kernels, device); empty: all")

// marginsFlag logs each comparison's largest difference relative to its
// bound, to see how close a path comes to its tolerance.
var marginsFlag = flag.Bool("margins", false, "log each comparison's largest difference relative to its bound")

// pathSelected says whether -paths lets the path named name run.
func pathSelected(name string) bool {
	return *pathsFlag == "" || slices.Contains(strings.Split(*pathsFlag, ","), name)
}

// deviceBackend is the nvptx backend, used by its own name (a wrapper
// would hide the interfaces the frontend asks it for: training layouts,
// concurrent compiles, op support), when the process has a GPU.
var deviceBackend = sync.OnceValues(func() (string, string) {
	if _, err := frontend.GPURuntime(); err != nil {
		return "", fmt.Sprintf("no GPU: %v", err)
	}
	return frontend.NVPTXBackend, ""
})

// gpuDownloads counts the copies from the GPU to the host: a check on
// the device path reads its results back, so a count that did not move
// means nothing ran there.
func gpuDownloads() int64 {
	rt, err := frontend.GPURuntime()
	if err != nil {
		return 0
	}
	return rt.Transfers().DtoH
}

// compiles counts the graphs each path's backend compiled, so that a
// check knows its path ran.
var compiles sync.Map // backend name → *atomic.Int64

func counted(name string) {
	v, _ := compiles.LoadOrStore(name, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func compileCount(name string) int64 {
	v, _ := compiles.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

// interpBackend is the interp backend, counted.
var interpBackend = sync.OnceValues(func() (string, string) {
	b, ok := frontend.LookupBackend(frontend.InterpBackend)
	if !ok {
		return "", "no interp backend"
	}
	const name = "shapes-interp"
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		counted(name)
		return b.Compile(g)
	}))
	return name, ""
})

// cpuStrictBackend is the cpu backend without its fallback: the
// lowering and the LLVM compile must succeed.
var cpuStrictBackend = sync.OnceValues(func() (string, string) {
	if _, err := cpu.FindTools(); err != nil {
		return "", fmt.Sprintf("no LLVM tools for the cpu backend: %v", err)
	}
	const name = "shapes-cpu-strict"
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		counted(name)
		pm, err := passes.Parse(frontend.LowerToLoopPipeline)
		if err != nil {
			return nil, err
		}
		if err := pm.Run(g.Context, g.Module); err != nil {
			return nil, fmt.Errorf("cpu backend: %s: %w", frontend.LowerToLoopPipeline, err)
		}
		prog, err := cpu.Compile(g.Module)
		if err != nil {
			return nil, fmt.Errorf("cpu backend: compile: %w", err)
		}
		fn := g.Func
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) { return prog.Run(fn, in) }), nil
	}))
	return name, ""
})

// ptxasPath is the offline ptxas, or "" when there is none.
var ptxasPath = sync.OnceValue(func() string {
	if p, ok := exec.FindPTXAS(); ok {
		return p
	}
	if os.Getenv(exec.PTXASEnv) == "off" {
		return ""
	}
	// Where scripts/setup-tools.sh unpacks it, for a run without env.sh.
	for _, p := range []string{"../.cache/tools/cuda/usr/bin/ptxas", "../.cache/tools/bin/ptxas"} {
		if abs, err := filepath.Abs(p); err == nil {
			if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
				return abs
			}
		}
	}
	return ""
})

// ptxasChecked caches ptxas's verdict on each PTX text (by hash): the
// same kernels recur across cases.
var ptxasChecked sync.Map // [32]byte → error

var ptxTarget = regexp.MustCompile(`(?m)^\.target\s+(sm_[0-9]+[a-z]?)`)

// assemble runs ptxas on text for the architecture its .target names.
func assemble(ptxas, text string) error {
	key := sha256.Sum256([]byte(text))
	if v, ok := ptxasChecked.Load(key); ok {
		err, _ := v.(error)
		return err
	}
	err := func() error {
		m := ptxTarget.FindStringSubmatch(text)
		if m == nil {
			return fmt.Errorf("PTX without a .target")
		}
		dir, err := os.MkdirTemp("", "shapes-ptxas-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		in := filepath.Join(dir, "k.ptx")
		if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
			return err
		}
		out, err := osexec.Command(ptxas, "-arch="+m[1], "-o", filepath.Join(dir, "k.cubin"), in).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ptxas -arch=%s rejected the PTX: %v\n%s", m[1], err, out)
		}
		return nil
	}()
	ptxasChecked.Store(key, err)
	return err
}

// gpuHostBackend generates each graph's PTX as the nvptx backend does for
// an H200 and has ptxas assemble it; when run, its executable runs the
// lowered module (the kernels and launches the PTX was generated from)
// in the interpreter, else it fails with frontend.ErrPTXOnly. With
// libraries, bf16 products and convolutions are cuBLASLt and cuDNN calls
// (the default on a GPU host); without, they are Strata's own wgmma and
// mma kernels.
func gpuHostBackend(libraries, run bool) (string, string) {
	gpuHostMu.Lock()
	defer gpuHostMu.Unlock()
	key := [2]bool{libraries, run}
	if r, ok := gpuHostMade[key]; ok {
		return r[0], r[1]
	}
	name, skip := newGPUHostBackend(libraries, run)
	gpuHostMade[key] = [2]string{name, skip}
	return name, skip
}

var (
	gpuHostMu   sync.Mutex
	gpuHostMade = map[[2]bool][2]string{}
)

func newGPUHostBackend(libraries, run bool) (string, string) {
	ptxas := ptxasPath()
	if ptxas == "" {
		return "", "no ptxas: run scripts/setup-tools.sh or set " + exec.PTXASEnv
	}
	interpB, ok := frontend.LookupBackend(frontend.InterpBackend)
	if !ok {
		return "", "no interp backend"
	}
	var kept sync.Map // *frontend.Graph → its PTX texts
	ptxOnly := frontend.PTXOnly(frontend.PTXOnlyOptions{Major: 9, Minor: 0, Libraries: libraries,
		Keep: func(g *frontend.Graph, prog *exec.Program, _ frontend.CompileTimes) { kept.Store(g, prog.PTX()) }})
	name := fmt.Sprintf("shapes-gpu-host-libraries-%v-run-%v", libraries, run)
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		counted(name)
		lowered := &frontend.Graph{Context: g.Context, Module: g.Module, Func: g.Func, Mode: g.Mode, Options: g.Options}
		if _, err := ptxOnly.Compile(lowered); err != nil {
			return nil, fmt.Errorf("nvptx backend (sm_90): %w", err)
		}
		v, _ := kept.LoadAndDelete(lowered)
		texts, _ := v.(map[string]string)
		text := ir.Sprint(lowered.Module, ir.PrintOptions{})
		if len(texts) == 0 && strings.Contains(text, "gpu.launch_func") {
			return nil, fmt.Errorf("nvptx backend (sm_90): launches but no PTX")
		}
		if !libraries && strings.Contains(text, "gpu.library_") {
			return nil, fmt.Errorf("nvptx backend (sm_90) without the libraries made a library call")
		}
		keys := make([]string, 0, len(texts))
		for k := range texts {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2)
		for i, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if err := assemble(ptxas, texts[k]); err != nil {
					errs[i] = fmt.Errorf("module %s: %w", k, err)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		if !run {
			return frontend.ExecutableFunc(func([]*interp.Tensor) ([]*interp.Tensor, error) { return nil, frontend.ErrPTXOnly }), nil
		}
		// The lowered module, as is, in the interpreter.
		return interpB.Compile(&frontend.Graph{Context: lowered.Context, Module: lowered.Module, Func: lowered.Func, Mode: lowered.Mode,
			Options: map[string]any{"pipeline": ""}})
	}))
	return name, ""
}

// heavyMACs is the work (multiply-adds) past which a case is heavy;
// libraryMACs, a half-precision case on a path with the libraries.
const (
	heavyMACs   = 300_000
	libraryMACs = 30 * heavyMACs
)

// isHeavy says whether a case of macs in dt is heavy on p.
func (p *modelPath) isHeavy(macs int, dt frontend.DType) bool {
	if p.libraries && (dt == frontend.BFloat16 || dt == frontend.Float16) {
		return macs > libraryMACs
	}
	return macs > heavyMACs
}

// forPaths runs check for each model path that can run here, as
// subtests named by the path; macs is the case's work in dt, for
// isHeavy. A check calls called on each call's error.
func forPaths(t *testing.T, macs int, dt frontend.DType, check func(t *testing.T, opts frontend.Options)) {
	t.Helper()
	for _, p := range modelPaths {
		if !pathSelected(p.name) {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			if n := p.seen.Add(1); p.every > 1 && !testsize.Long() && (n-1)%int64(p.every) != 0 {
				t.Skipf("the %s path runs on one case in %d (all under %s=1)", p.name, p.every, testsize.EnvVar)
			}
			name, skip := p.backend(p.isHeavy(macs, dt))
			if skip != "" {
				t.Skip(skip)
			}
			count := func() int64 { return compileCount(name) }
			if p.ran != nil {
				count = p.ran
			}
			before := count()
			check(t, frontend.Options{Backend: name})
			if !t.Failed() && count() == before {
				t.Errorf("the %s path compiled or ran no graph", p.name)
			}
		})
	}
}

// called fails t on a call's error; the stop of a gpu path that only
// generates code (a heavy case) skips the rest of t, its PTX assembled.
func called(t *testing.T, what string, err error) {
	t.Helper()
	if errors.Is(err, frontend.ErrPTXOnly) {
		t.Skipf("%s: PTX generated and assembled; the kernels run in the interpreter under %s=1", what, testsize.EnvVar)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// tolOf is the comparison tolerance of results computed in dt: a
// fraction of the reference's largest magnitude.
func tolOf(dt frontend.DType) float64 {
	if dt == frontend.BFloat16 || dt == frontend.Float16 {
		return 4e-2
	}
	return 2e-4
}

// gradTols returns the tolerance of each of grads (the reference's
// gradients): tol, but at no less than a hundredth of the largest
// gradient's magnitude, and a tenth of it for a gradient that is zero in
// exact arithmetic (a convolution's bias before training-mode batch
// norm, k's bias in attention: what the next layer subtracts again).
// Such a gradient is rounding noise of the size of the terms that cancel,
// which batch norm scales by 1/σ: over the few values of a small map's
// channel, 1.9e-6 where the largest gradient is 0.29 (TestModelsRapid).
func gradTols(grads []*frontend.Tensor, tol float64) []float64 {
	largest, scales, zero := 0.0, make([]float64, len(grads)), make([]bool, len(grads))
	for k, g := range grads {
		scales[k] = 1e-3
		m := 0.0
		for _, v := range g.Float64s() {
			m = max(m, math.Abs(v))
		}
		scales[k] = max(scales[k], m)
		largest = max(largest, m)
		zero[k] = m < 1e-12
	}
	tols := make([]float64, len(grads))
	for k, sc := range scales {
		floor := largest / 100
		if zero[k] {
			floor = largest / 10
		}
		tols[k] = tol * max(1, floor/sc)
	}
	return tols
}

// closeTo fails unless got has want's shape and every element is within
// tol·(max|want| + 1e-3) + tol·|want| of want (errors of a whole model
// scale with its activations, not with each element). Its failure names
// the worst element (a NaN first) and counts the elements off and the
// zeros.
func closeTo(t tb, what string, got *frontend.Tensor, shape []int, want []float64, tol float64) {
	t.Helper()
	if err := got.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !slices.Equal(got.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	g := got.Float64s()
	scale := 1e-3
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	// The worst element, and how many are off and how many are zero: a
	// lost output (all zeros) and one bad element read alike otherwise.
	worst, at, off, zeros := 0.0, -1, 0, 0
	for i, w := range want {
		d := math.Abs(g[i] - w)
		if g[i] == 0 {
			zeros++
		}
		if d <= tol*scale+tol*math.Abs(w) {
			continue
		}
		off++
		if at < 0 || d > worst || math.IsNaN(d) && !math.IsNaN(worst) {
			worst, at = d, i
		}
	}
	if at >= 0 {
		t.Fatalf("%s: element %d of %d is %g, want %g (|Δ| %.3g, scale %.3g, tol %g); %d elements off, %d zero",
			what, at, len(want), g[at], want[at], worst, scale, tol, off, zeros)
	}
	if l, ok := t.(interface{ Logf(string, ...any) }); ok && *marginsFlag {
		margin := 0.0
		for i, w := range want {
			margin = max(margin, math.Abs(g[i]-w)/(tol*scale+tol*math.Abs(w)))
		}
		l.Logf("margin %s: %.3f of the bound", what, margin)
	}
}

// fatalRecorder is a tb that keeps the message of its Fatalf.
type fatalRecorder struct{ msg string }

func (*fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// TestCloseToReport: closeTo names the worst element, or the first NaN,
// and counts the elements off and the zeros, so that a lost output (all
// zeros) reads unlike one bad element.
func TestCloseToReport(t *testing.T) {
	want := []float64{1, 2, 3, 4}
	for _, tc := range []struct {
		got  []float32
		want string // "" passes
	}{
		{[]float32{1, 2, 3, 4}, ""},
		{[]float32{0, 0, 0, 0}, "element 3 of 4 is 0, want 4 (|Δ| 4, scale 4, tol 0.01); 4 elements off, 4 zero"},
		{[]float32{1, 2, 0, 4}, "element 2 of 4 is 0, want 3 (|Δ| 3, scale 4, tol 0.01); 1 elements off, 1 zero"},
		{[]float32{1, float32(math.NaN()), 9, float32(math.NaN())}, "element 1 of 4 is NaN, want 2"},
	} {
		r := &fatalRecorder{}
		closeTo(r, "out", frontend.FromSlice(tc.got, 4), []int{4}, want, 0.01)
		if tc.want == "" && r.msg != "" || !strings.Contains(r.msg, tc.want) {
			t.Errorf("closeTo(%v): %q, want %q", tc.got, r.msg, tc.want)
		}
	}
}
