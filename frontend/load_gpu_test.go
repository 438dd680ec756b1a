package frontend_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/npy"
)

// TestGPULoadTorchExports loads every PyTorch export of
// importers/onnx/testdata (made by its export.py: CNNs, ResNet and
// MobileNet blocks, transformer blocks; dynamic batch where a second input
// exists) on the nvptx backend and compares with PyTorch's outputs at each
// batch size. The tolerance is the importer's interpreter test's, 1e-3
// relative to 1+|want|: the GPU's exp, division and reduction orders
// differ from PyTorch's CPU kernels by far less.
func TestGPULoadTorchExports(t *testing.T) {
	gpu(t)
	paths, _ := filepath.Glob(filepath.Join("..", "importers", "onnx", "testdata", "torch*", "*.onnx"))
	if len(paths) == 0 {
		t.Fatal("no exported models in importers/onnx/testdata")
	}
	for _, path := range paths {
		base := strings.TrimSuffix(path, ".onnx")
		t.Run(filepath.Base(filepath.Dir(base))+"/"+filepath.Base(base), func(t *testing.T) {
			model, err := frontend.Load(path, frontend.Options{Backend: frontend.NVPTXBackend})
			if err != nil {
				t.Fatal(err)
			}
			for _, suffix := range []string{"", "2"} {
				if _, err := os.Stat(base + ".in" + suffix + ".npy"); os.IsNotExist(err) && suffix == "2" {
					continue
				}
				x := readNPYAny(t, base+".in"+suffix+".npy")
				want := readNPY(t, base+".out"+suffix+".npy")
				out, err := model.Call(x)
				if err != nil {
					t.Fatalf("batch %v: %v", x.Shape(), err)
				}
				got, w := out[0].Float32s(), want.Float32s()
				if len(got) != len(w) {
					t.Fatalf("batch %v: %d outputs, want %d", x.Shape(), len(got), len(w))
				}
				worst := 0.0
				for i := range got {
					d := math.Abs(float64(got[i] - w[i]))
					if d > 1e-3*(1+math.Abs(float64(w[i]))) || math.IsNaN(float64(got[i])) {
						t.Fatalf("batch %v: output %d is %v, want %v", x.Shape(), i, got[i], w[i])
					}
					worst = max(worst, d)
				}
				t.Logf("input %v: max |diff| %.3g over %d outputs", x.Shape(), worst, len(got))
			}
		})
	}
}

// readNPYAny reads a float32 or int64 (token ids) input.
func readNPYAny(t *testing.T, path string) *frontend.Tensor {
	t.Helper()
	arr, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if arr.DType != npy.Int64 {
		return readNPY(t, path)
	}
	vs, err := npy.ToSlice[int64](arr)
	if err != nil {
		t.Fatal(err)
	}
	shape := make([]int, len(arr.Shape))
	for i, d := range arr.Shape {
		shape[i] = int(d)
	}
	return frontend.FromSlice(vs, shape...)
}
