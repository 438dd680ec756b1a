package frontend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/importers/onnx"
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
