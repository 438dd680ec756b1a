package frontend_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/importers/onnx"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

// TestLoadONNX loads a model with a dim_param batch once and calls it at
// two batch sizes: y = relu(x·w + b).
func TestLoadONNX(t *testing.T) {
	g := &onnx.Graph{
		Inputs: []*onnx.ValueInfo{{Name: "x", ElemType: onnx.TypeFloat, HasShape: true,
			Dims: []onnx.Dim{{Param: "batch"}, {Value: 2, HasValue: true}}}},
		Outputs: []*onnx.ValueInfo{{Name: "y", ElemType: onnx.TypeFloat}},
		Initializers: []*onnx.Tensor{
			{Name: "w", Dims: []int64{2, 3}, DataType: onnx.TypeFloat, FloatData: []float32{1, 2, 3, 4, 5, 6}},
			{Name: "b", Dims: []int64{3}, DataType: onnx.TypeFloat, FloatData: []float32{0.5, -30, 1}},
		},
		Nodes: []*onnx.Node{
			{OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"h"}},
			{OpType: "Add", Inputs: []string{"h", "b"}, Outputs: []string{"a"}},
			{OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"y"}},
		},
	}
	m := &onnx.Model{IRVersion: 8, Opsets: []onnx.OpsetID{{Version: 17}}, Graph: g}
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := os.WriteFile(path, m.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	model, err := frontend.Load(path, frontend.Options{Backend: "eager"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x    []float32
		want []float32
	}{
		{[]float32{1, 1}, []float32{5.5, 0, 10}},
		{[]float32{1, 0, 0, 1, 2, 0}, []float32{1.5, 0, 4, 4.5, 0, 7, 2.5, 0, 7}},
	} {
		out, err := model.Call(frontend.FromSlice(tc.x, len(tc.x)/2, 2))
		if err != nil {
			t.Fatal(err)
		}
		got := out[0].Float32s()
		if len(got) != len(tc.want) {
			t.Fatalf("got %v, want %v", got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("x %v: got %v, want %v", tc.x, got, tc.want)
			}
		}
	}
	if _, err := model.Call(frontend.FromSlice([]float32{1, 2, 3}, 1, 3)); err == nil {
		t.Error("a wrong input size was accepted")
	}
	if _, err := frontend.Load(filepath.Join(t.TempDir(), "m.txt"), frontend.Options{}); err == nil || !strings.Contains(err.Error(), "unknown model format") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestLoadTorchCNN loads a CNN exported by PyTorch 2.11 (weights in an
// external data file; they become arguments bound at load) and matches
// PyTorch's output at two batch sizes.
func TestLoadTorchCNN(t *testing.T) {
	dir := filepath.Join("..", "importers", "onnx", "testdata", "torch211")
	model, err := frontend.Load(filepath.Join(dir, "cnn_small.onnx"), frontend.Options{Backend: "eager"})
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "2"} {
		x := readNPY(t, filepath.Join(dir, "cnn_small.in"+suffix+".npy"))
		want := readNPY(t, filepath.Join(dir, "cnn_small.out"+suffix+".npy"))
		out, err := model.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		got, w := out[0].Float32s(), want.Float32s()
		if len(got) != len(w) {
			t.Fatalf("%d outputs, want %d", len(got), len(w))
		}
		for i := range got {
			if d := got[i] - w[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("batch %v: output %d is %v, want %v", out[0].Shape(), i, got[i], w[i])
			}
		}
	}
}

func readNPY(t *testing.T, path string) *frontend.Tensor {
	t.Helper()
	arr, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := npy.ToSlice[float32](arr)
	if err != nil {
		t.Fatal(err)
	}
	shape := make([]int, len(arr.Shape))
	for i, d := range arr.Shape {
		shape[i] = int(d)
	}
	return frontend.FromSlice(vs, shape...)
}

// TestLoadDynamicSpatial loads a CNN exported with a dynamic batch,
// height and width (pooling needs static spatial sizes: the import fails
// with onnx.ErrSymbolicSizes) and calls it at three input sizes: each is
// imported and compiled at its first call, and matches the interpreter
// on an import for those sizes; a size seen before is not compiled again.
func TestLoadDynamicSpatial(t *testing.T) {
	w := make([]float32, 4*3*3*3)
	for i := range w {
		w[i] = float32(i%7-3) / 4
	}
	dim := func(p string) onnx.Dim { return onnx.Dim{Param: p} }
	g := &onnx.Graph{
		Inputs: []*onnx.ValueInfo{{Name: "x", ElemType: onnx.TypeFloat, HasShape: true,
			Dims: []onnx.Dim{dim("N"), {Value: 3, HasValue: true}, dim("H"), dim("W")}}},
		Outputs:      []*onnx.ValueInfo{{Name: "y", ElemType: onnx.TypeFloat}},
		Initializers: []*onnx.Tensor{{Name: "w", Dims: []int64{4, 3, 3, 3}, DataType: onnx.TypeFloat, FloatData: w}},
		Nodes: []*onnx.Node{
			{OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"c"}, Attrs: []*onnx.Attribute{{Name: "pads", Type: onnx.AttrInts, Ints: []int64{1, 1, 1, 1}}}},
			{OpType: "MaxPool", Inputs: []string{"c"}, Outputs: []string{"p"}, Attrs: []*onnx.Attribute{
				{Name: "kernel_shape", Type: onnx.AttrInts, Ints: []int64{2, 2}}, {Name: "strides", Type: onnx.AttrInts, Ints: []int64{2, 2}}}},
			{OpType: "GlobalAveragePool", Inputs: []string{"p"}, Outputs: []string{"y"}},
		},
	}
	m := &onnx.Model{IRVersion: 8, Opsets: []onnx.OpsetID{{Version: 17}}, Graph: g}
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := os.WriteFile(path, m.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.Import(dialects.NewContext(), path, onnx.Options{}); !errors.Is(err, onnx.ErrSymbolicSizes) {
		t.Fatalf("the symbolic import: %v, want onnx.ErrSymbolicSizes", err)
	}
	// The eager backend, counting its compiles.
	eager, ok := frontend.LookupBackend(frontend.EagerBackend)
	if !ok {
		t.Fatal("no eager backend")
	}
	compiles := 0
	frontend.RegisterBackend("load-dynamic-spatial", frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		compiles++
		return eager.Compile(g)
	}))
	model, err := frontend.Load(path, frontend.Options{Backend: "load-dynamic-spatial"})
	if err != nil {
		t.Fatal(err)
	}
	for k, shape := range [][]int{{2, 3, 8, 10}, {1, 3, 5, 7}, {2, 3, 8, 10}} {
		x := frontend.Rand(uint64(shape[2]), shape...)
		out, err := model.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		mod, err := onnx.Import(dialects.NewContext(), path, onnx.Options{Dims: map[string]int64{"N": int64(shape[0]), "H": int64(shape[2]), "W": int64(shape[3])}})
		if err != nil {
			t.Fatal(err)
		}
		xv, err := interp.FromFloat64s(ir.F32, []int64{int64(shape[0]), 3, int64(shape[2]), int64(shape[3])}, x.Float64s())
		if err != nil {
			t.Fatal(err)
		}
		want, err := interp.New(mod).Call("main", xv)
		if err != nil {
			t.Fatal(err)
		}
		got, wv := out[0].Float64s(), want[0].(*interp.Tensor).Float64s()
		if len(got) != len(wv) || len(got) != shape[0]*4 {
			t.Fatalf("%v: %d outputs, want %d", shape, len(got), len(wv))
		}
		for i := range got {
			if math.Abs(got[i]-wv[i]) > 1e-6 {
				t.Fatalf("%v: output %d is %v, want %v", shape, i, got[i], wv[i])
			}
		}
		if want := min(k+1, 2); compiles != want {
			t.Errorf("after %d calls: %d compiles, want %d", k+1, compiles, want)
		}
	}
	if _, err := model.Call(frontend.Rand(1, 2, 3, 4)); err == nil || !strings.Contains(err.Error(), "rank 4") {
		t.Errorf("a rank-3 input: %v", err)
	}
}
