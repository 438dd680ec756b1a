package frontend_test

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
)

// recordingBackend compiles with an inner backend and keeps the text of
// every module it was given.
type recordingBackend struct {
	mu      sync.Mutex
	inner   string
	modules []string // as given to the backend
	lowered []string // after the inner backend's passes
}

func (b *recordingBackend) Compile(g *frontend.Graph) (frontend.Executable, error) {
	b.mu.Lock()
	b.modules = append(b.modules, ir.Sprint(g.Module, ir.PrintOptions{}))
	b.mu.Unlock()
	inner, _ := frontend.LookupBackend(b.inner)
	exe, err := inner.Compile(g)
	b.mu.Lock()
	b.lowered = append(b.lowered, ir.Sprint(g.Module, ir.PrintOptions{}))
	b.mu.Unlock()
	return exe, err
}

// compiled returns the modules given to the backend; b.mu is held.
func (b *recordingBackend) compiled() []string { return slices.Clone(b.modules) }

func recording(t *testing.T, inner string) (*recordingBackend, string) {
	b := &recordingBackend{inner: inner}
	name := "recording-" + t.Name()
	frontend.RegisterBackend(name, b)
	return b, name
}

// captureLogs enables topics and returns the buffer they write to.
func captureLogs(t *testing.T, topics ...string) *bytes.Buffer {
	var buf bytes.Buffer
	old := logs.SetOutput(&buf)
	logs.Enable(topics...)
	t.Cleanup(func() {
		logs.SetOutput(old)
		logs.Disable()
	})
	return &buf
}

// rowSoftmax is softmax over the last dim scaled by a captured weight row.
func rowSoftmax(w *frontend.Tensor) func(x *frontend.Tensor) *frontend.Tensor {
	return func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(w).Softmax(-1) }
}

// wantRowSoftmax computes rowSoftmax in Go.
func wantRowSoftmax(x []float32, w []float32) []float32 {
	n := len(w)
	out := make([]float32, len(x))
	for r := 0; r < len(x)/n; r++ {
		m := math.Inf(-1)
		for j := range n {
			m = math.Max(m, float64(x[r*n+j]*w[j]))
		}
		var sum float64
		for j := range n {
			sum += math.Exp(float64(x[r*n+j]*w[j]) - m)
		}
		for j := range n {
			out[r*n+j] = float32(math.Exp(float64(x[r*n+j]*w[j])-m) / sum)
		}
	}
	return out
}

func rowsInput(rows, cols int) *frontend.Tensor {
	data := make([]float32, rows*cols)
	for i := range data {
		data[i] = float32((i*7)%11) / 5
	}
	return frontend.FromSlice(data, rows, cols)
}

// dynamicRun calls a rowSoftmax compiled with opts at five row counts,
// checking every result, and returns the modules the backend compiled.
func dynamicRun(t *testing.T, opts frontend.Options, inner string) []string {
	mods, _ := dynamicRunLowered(t, opts, inner)
	return mods
}

// dynamicRunLowered is dynamicRun that also returns the modules after the
// inner backend's passes.
func dynamicRunLowered(t *testing.T, opts frontend.Options, inner string) (mods, lowered []string) {
	t.Helper()
	b, name := recording(t, inner)
	opts.Backend = name
	wData := []float32{1, 0.5, 2, -1}
	w := frontend.FromSlice(wData, 4)
	c := frontend.MustCompile(rowSoftmax(w), opts)
	for _, rows := range []int{3, 5, 8, 17, 2} {
		x := rowsInput(rows, 4)
		out := call(t, c, x)
		if got := out[0].Shape(); len(got) != 2 || got[0] != rows || got[1] != 4 {
			t.Fatalf("rows=%d: result shape %v", rows, got)
		}
		near(t, out[0].Float32s(), wantRowSoftmax(x.Float32s(), wData))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.compiled(), slices.Clone(b.lowered)
}

func TestAutomaticDynamicCompilesStaticThenSymbolic(t *testing.T) {
	buf := captureLogs(t, "recompiles", "guards")
	mods := dynamicRun(t, frontend.Options{}, frontend.InterpBackend)
	if len(mods) != 2 {
		t.Fatalf("compiled %d graphs for 5 row counts, want 2 (static, then symbolic)", len(mods))
	}
	if strings.Contains(mods[0], "#graph.dims") || !strings.Contains(mods[0], "tensor<3x4xf32>") {
		t.Errorf("first graph is not static:\n%s", mods[0])
	}
	if !strings.Contains(mods[1], "#graph.dims<[s0, 4]>") {
		t.Errorf("second graph has no symbolic row count:\n%s", mods[1])
	}
	if !strings.Contains(mods[1], "graph.guards") || !strings.Contains(mods[1], "arg0.shape[0] == s0") {
		t.Errorf("second graph carries no sym guards:\n%s", mods[1])
	}
	log := buf.String()
	for _, want := range []string{
		"automatic dynamic: argument 0 dim 0 changed from 3 to 5",
		"guards failed:",
		"- arg0.shape[0] == 3 (got 5)", // sym's Explain diff
		"arg0.shape[0] == s0",          // the new graph's guards
		"s0 >= 1",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("logs lack %q:\n%s", want, log)
		}
	}
}

func TestAutomaticDynamicTrueCompilesOnce(t *testing.T) {
	mods := dynamicRun(t, frontend.Options{Dynamic: frontend.DynamicTrue}, frontend.InterpBackend)
	if len(mods) != 1 {
		t.Fatalf("compiled %d graphs for 5 row counts, want 1", len(mods))
	}
	// Both dims of x were made symbolic; the mul with the static weight
	// unified the columns with 4, so only the rows stay symbolic.
	for _, want := range []string{"#graph.dims<[s0, 4]>", `graph.constraints = ["s1 == 4"]`, `"arg0.shape[1] == 4"`} {
		if !strings.Contains(mods[0], want) {
			t.Errorf("graph lacks %s:\n%s", want, mods[0])
		}
	}
}

func TestAutomaticDynamicFalseCompilesEverySize(t *testing.T) {
	if mods := dynamicRun(t, frontend.Options{Dynamic: frontend.DynamicFalse}, frontend.InterpBackend); len(mods) != 5 {
		t.Fatalf("compiled %d graphs for 5 row counts, want 5", len(mods))
	}
}

// The paths of the nvptx backend, through the interpreter: one module
// lowered to loops, or to kernels and launches, with sizes as run-time
// values, serves every row count.
func TestAutomaticDynamicLoweredServesEverySize(t *testing.T) {
	for _, pipeline := range []string{"lower-to-loop", "lower-to-gpu"} {
		t.Run(pipeline, func(t *testing.T) {
			opts := frontend.Options{BackendOptions: map[string]any{"pipeline": pipeline}}
			mods, lowered := dynamicRunLowered(t, opts, frontend.InterpBackend)
			if len(mods) != 2 {
				t.Fatalf("compiled %d graphs for 5 row counts, want 2", len(mods))
			}
			if !strings.Contains(lowered[1], "memref<?x4xf32>") || strings.Contains(lowered[1], "\"graph.") {
				t.Errorf("symbolic graph was not lowered with a dynamic row count:\n%s", lowered[1])
			}
		})
	}
}

func TestRecompileGuardDiffNamesDtype(t *testing.T) {
	buf := captureLogs(t, "recompiles")
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Exp() }, frontend.Options{})
	call(t, c, frontend.Ones(frontend.Float32, 4))
	call(t, c, frontend.Ones(frontend.Float64, 4))
	if !strings.Contains(buf.String(), "- arg0.dtype == f32 (got f64)") {
		t.Errorf("recompile log lacks the failed dtype guard:\n%s", buf.String())
	}
	if st := c.Stats(); st.Compiles != 2 {
		t.Errorf("compiles = %d, want 2", st.Compiles)
	}
}

func TestAutomaticDynamicShapeReadSpecializes(t *testing.T) {
	b, name := register(t, "")
	// The graph reads its row count into a Go value: it holds for that
	// size only, so each size compiles (and is guarded exactly).
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		return x.Mul(frontend.Full(frontend.Float32, float64(x.Shape()[0]), x.Shape()...))
	}
	c := frontend.MustCompile(fn, frontend.Options{Backend: name, Dynamic: frontend.DynamicTrue})
	for _, n := range []int{2, 3, 2} {
		out := call(t, c, frontend.Ones(frontend.Float32, n))
		if got := out[0].Float32s(); len(got) != n || got[0] != float32(n) {
			t.Fatalf("n=%d: got %v", n, got)
		}
	}
	if b.count() != 2 {
		t.Errorf("compiles = %d, want 2 (one per size read)", b.count())
	}
}

// TestSpecializedGraphIsCompiledStatic checks that a graph whose code
// reads the sizes of its dynamic inputs (so it holds for those sizes only)
// reaches the backend with the static types of its inputs: no "?" sizes
// for the backend to generate dynamic index math for. The results stay
// right at every size, against the eager backend.
func TestSpecializedGraphIsCompiledStatic(t *testing.T) {
	b, name := recording(t, frontend.InterpBackend)
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		rows := x.Shape()[0]
		return x.Softmax(-1).Mul(frontend.Full(frontend.Float32, float64(rows), 1))
	}
	c := frontend.MustCompile(fn, frontend.Options{Backend: name, Dynamic: frontend.DynamicAuto})
	ref := frontend.MustCompile(fn, frontend.Options{Backend: frontend.EagerBackend})
	for i, rows := range []int{2, 3, 5} {
		x := frontend.Rand(uint64(i+1), rows, 4)
		got, want := call(t, c, x)[0], call(t, ref, x)[0]
		nearTol(t, fmt.Sprintf("rows %d", rows), got.Float32s(), want.Float32s(), 1e-6)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.modules) != 3 {
		t.Fatalf("%d compiles, want 3 (one per size read)", len(b.modules))
	}
	for i, m := range b.modules {
		if strings.Contains(m, "?") {
			t.Errorf("compile %d: the backend got dynamic sizes:\n%s", i, m)
		}
	}
	if !strings.Contains(b.modules[1], "tensor<3x4xf32>") {
		t.Errorf("compile 1: want the static type tensor<3x4xf32>:\n%s", b.modules[1])
	}
}

// TestDynamicReplayShapesRepeat calls one symbolic graph with row counts
// that come back (a replay infers each op's result shape once for operand
// shapes it has seen, and keeps at most a few of them) and more distinct
// ones than it keeps: every call's result has its own shape and values.
func TestDynamicReplayShapesRepeat(t *testing.T) {
	wData := []float32{1, 0.5, 2, -1}
	c := frontend.MustCompile(rowSoftmax(frontend.FromSlice(wData, 4)), frontend.Options{Dynamic: frontend.DynamicTrue, Backend: frontend.InterpBackend})
	rows := []int{3, 5, 3, 8, 5, 3}
	for n := 2; n <= 24; n++ {
		rows = append(rows, n)
	}
	rows = append(rows, 3, 24, 17, 5)
	for _, n := range rows {
		x := rowsInput(n, 4)
		out := call(t, c, x)
		if got := out[0].Shape(); len(got) != 2 || got[0] != n || got[1] != 4 {
			t.Fatalf("rows=%d: result shape %v", n, got)
		}
		near(t, out[0].Float32s(), wantRowSoftmax(x.Float32s(), wData))
	}
	if st := c.Stats(); st.Compiles != 1 {
		t.Errorf("%d compiles, want 1", st.Compiles)
	}
}
