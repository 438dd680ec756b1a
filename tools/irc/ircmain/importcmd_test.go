package ircmain

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/importers/onnx"
	"github.com/strata-ir/strata/runtime/npy"
	"github.com/strata-ir/strata/targets/cpu"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of irc import")

// tinyModel is Gemm(x, w, b, transB) → Relu with a dim_param batch: y =
// relu(x·wᵀ + b) with w = [[1, 2], [3, 4], [5, 6]] and b = [0.5, -10, 1].
func tinyModel(op string) []byte {
	f := func(vs ...float32) []float32 { return vs }
	g := &onnx.Graph{
		Name: "tiny",
		Inputs: []*onnx.ValueInfo{{Name: "x", ElemType: onnx.TypeFloat, HasShape: true,
			Dims: []onnx.Dim{{Param: "batch"}, {Value: 2, HasValue: true}}}},
		Outputs: []*onnx.ValueInfo{{Name: "y", ElemType: onnx.TypeFloat}},
		Initializers: []*onnx.Tensor{
			{Name: "w", Dims: []int64{3, 2}, DataType: onnx.TypeFloat, FloatData: f(1, 2, 3, 4, 5, 6)},
			{Name: "b", Dims: []int64{3}, DataType: onnx.TypeFloat, FloatData: f(0.5, -10, 1)},
		},
		Nodes: []*onnx.Node{
			{OpType: "Gemm", Name: "fc", Inputs: []string{"x", "w", "b"}, Outputs: []string{"h"},
				Attrs: []*onnx.Attribute{{Name: "transB", Type: onnx.AttrInt, I: 1}}},
			{OpType: op, Name: "act", Inputs: []string{"h"}, Outputs: []string{"y"}},
		},
	}
	m := &onnx.Model{IRVersion: 8, Opsets: []onnx.OpsetID{{Version: 17}}, Graph: g}
	return m.Marshal()
}

func TestImportGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.onnx")
	if err := os.WriteFile(path, tinyModel("Relu"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := irc(t, "", "import", path)
	if r.status != ExitOK {
		t.Fatalf("status %d: %s", r.status, r.stderr)
	}
	golden := filepath.Join("testdata", "import_tiny.mlir")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout != string(want) {
		t.Errorf("irc import differs from %s (go test -update rewrites it):\n%s", golden, r.stdout)
	}
	// The text runs, at two batch sizes, as the model does.
	dir := t.TempDir()
	out := filepath.Join(dir, "tiny.mlir")
	if r := irc(t, "", "import", path, "-o", out); r.status != ExitOK {
		t.Fatalf("import -o: %s", r.stderr)
	}
	for _, tc := range []struct {
		x    []float32
		want []float32
	}{
		{[]float32{1, 1}, []float32{3.5, 0, 12}},
		{[]float32{1, 0, 0, 1, -1, 0}, []float32{1.5, 0, 6, 2.5, 0, 7, 0, 0, 0}},
	} {
		for _, file := range []string{out, path} {
			x, _ := npy.FromSlice([]int64{int64(len(tc.x) / 2), 2}, tc.x)
			xf, yf := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
			if err := npy.WriteFile(xf, x); err != nil {
				t.Fatal(err)
			}
			if r := irc(t, "", "run", file, "--input", xf, "--output", yf); r.status != ExitOK {
				t.Fatalf("run %s: %s", file, r.stderr)
			}
			y, err := npy.ReadFile(yf)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := npy.ToSlice[float32](y)
			if !slices.Equal(got, tc.want) {
				t.Errorf("run %s on %v: %v, want %v", filepath.Base(file), tc.x, got, tc.want)
			}
		}
	}
}

// TestImportUnsupportedWritesNothing: an unsupported op fails with the
// node, op_type and opset, and leaves an existing output file alone.
func TestImportUnsupportedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.onnx")
	if err := os.WriteFile(path, tinyModel("Hardmax"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.mlir")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := irc(t, "", "import", path, "-o", out)
	want := `bad.onnx: node 1 "act" (op_type Hardmax, opset 17): unsupported operator`
	if r.status != ExitDiagnostics || !strings.Contains(r.stderr, want) {
		t.Errorf("status %d, stderr %q; want 1 and %q", r.status, r.stderr, want)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("the output file changed to %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if r := irc(t, "", "run", path, "--random-inputs", "1"); r.status != ExitDiagnostics || !strings.Contains(r.stderr, want) {
		t.Errorf("irc run: status %d, stderr %q", r.status, r.stderr)
	}
	if r := irc(t, "", "import", filepath.Join(dir, "model.txt")); r.status != ExitUsage {
		t.Errorf("unknown format: status %d", r.status)
	}
}

// TestImportStableHLO: irc import converts StableHLO text into graph ops,
// irc run runs StableHLO directly, and custom_call is a located error.
func TestImportStableHLO(t *testing.T) {
	const prog = `func.func @main(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %1 = "stablehlo.reduce"(%x, %0) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = "stablehlo.negate"(%1) : (tensor<3xf32>) -> tensor<3xf32>
  return %2 : tensor<3xf32>
}
`
	path := writeFile(t, "jax.mlir", prog)
	r := irc(t, "", "import", path)
	if r.status != ExitOK || strings.Contains(r.stdout, "stablehlo.") || !strings.Contains(r.stdout, `"graph.reduce_sum"`) {
		t.Fatalf("status %d, stderr %s, output:\n%s", r.status, r.stderr, r.stdout)
	}
	dir := t.TempDir()
	x, _ := npy.FromSlice([]int64{2, 3}, []float32{1, 2, 3, 10, 20, 30})
	xf, yf := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	if err := npy.WriteFile(xf, x); err != nil {
		t.Fatal(err)
	}
	if r := irc(t, "", "run", path, "--input", xf, "--output", yf); r.status != ExitOK {
		t.Fatalf("run: %s", r.stderr)
	}
	y, _ := npy.ReadFile(yf)
	if got, _ := npy.ToSlice[float32](y); !slices.Equal(got, []float32{-11, -22, -33}) {
		t.Errorf("run: %v", got)
	}
	bad := writeFile(t, "bad.mlir", `func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.custom_call"(%x) <{call_target_name = "Sharding"}> : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
`)
	if r := irc(t, "", "import", bad); r.status != ExitDiagnostics || !strings.Contains(r.stderr, `bad.mlir:2:8: error: 'stablehlo.custom_call' op custom_call "Sharding" is not supported`) {
		t.Errorf("custom_call: status %d, stderr %s", r.status, r.stderr)
	}
}

// TestRunONNXOnCPU runs an imported model on the cpu backend, whose
// weights are bound as lifted arguments (skipped without the LLVM tools).
func TestRunONNXOnCPU(t *testing.T) {
	if _, err := cpu.FindTools(); err != nil {
		t.Skipf("no LLVM tools: %v", err)
	}
	path := filepath.Join(t.TempDir(), "tiny.onnx")
	if err := os.WriteFile(path, tinyModel("Relu"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	x, _ := npy.FromSlice([]int64{3, 2}, []float32{1, 0, 0, 1, -1, 0})
	xf, yf := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	if err := npy.WriteFile(xf, x); err != nil {
		t.Fatal(err)
	}
	if r := irc(t, "", "run", path, "--backend", "cpu", "--input", xf, "--output", yf); r.status != ExitOK {
		t.Fatalf("run: %s", r.stderr)
	}
	y, _ := npy.ReadFile(yf)
	if got, _ := npy.ToSlice[float32](y); !slices.Equal(got, []float32{1.5, 0, 6, 2.5, 0, 7, 0, 0, 0}) {
		t.Errorf("got %v", got)
	}
}

// TestRunJAXExportsOnCPU runs JAX 0.11's exports (importers/stablehlo
// testdata: an MLP, a CNN, an attention block, each with private functions
// and weights as constants) on the cpu backend, compiled (no fallback to
// the interpreter), against JAX's outputs.
func TestRunJAXExportsOnCPU(t *testing.T) {
	if _, err := cpu.FindTools(); err != nil {
		t.Skipf("no LLVM tools: %v", err)
	}
	dir := filepath.Join("..", "..", "..", "importers", "stablehlo", "testdata")
	for _, name := range []string{"mlp", "cnn", "attention"} {
		args := []string{"run", filepath.Join(dir, name+".mlir"), "--backend", "cpu"}
		ins, _ := filepath.Glob(filepath.Join(dir, name+".in*.npy"))
		for _, in := range ins {
			args = append(args, "--input", in)
		}
		out := filepath.Join(t.TempDir(), "out.npy")
		r := irc(t, "", append(args, "--output", out)...)
		if r.status != ExitOK || strings.Contains(r.stderr, "interpreter") {
			t.Fatalf("%s: status %d, stderr %s", name, r.status, r.stderr)
		}
		got, err := npy.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := npy.ReadFile(filepath.Join(dir, name+".out.npy"))
		if err != nil {
			t.Fatal(err)
		}
		g, _ := npy.ToSlice[float32](got)
		w, _ := npy.ToSlice[float32](want)
		if !slices.Equal(got.Shape, want.Shape) || len(g) != len(w) {
			t.Fatalf("%s: shape %v, JAX's %v", name, got.Shape, want.Shape)
		}
		for i := range w {
			if d := math.Abs(float64(g[i] - w[i])); d > 1e-4*(1+math.Abs(float64(w[i]))) {
				t.Fatalf("%s: element %d is %g, JAX's %g", name, i, g[i], w[i])
			}
		}
	}
}
