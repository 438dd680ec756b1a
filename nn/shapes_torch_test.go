package nn_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/npy"
)

// TestShapesTorchExports loads the models PyTorch exported to ONNX
// (importers/onnx/testdata/export.py: torch by PyTorch 1.13's exporter,
// torch211 and torch211cnn by PyTorch 2.11's dynamo exporter with the
// weights in an external file, torch211ts by its TorchScript exporter):
// a small CNN (batch norm, a grouped strided conv, max and ceil-mode
// average pooling), an MLP with a dynamic batch, a GPT block
// (embeddings, causal attention with a sliced tril mask, tanh GELU),
// PyTorch's TransformerEncoderLayer, and small torchvision-style CNNs
// (ResNet basic and bottleneck blocks, MobileNetV2, squeeze-excite with
// SiLU and Hardswish, every pooling form, Inception and DenseNet
// concatenation, ShuffleNet's channel shuffle, ConvNeXt, the padding
// modes, a decoder with upsampling and group and instance norms); on
// every model path, against PyTorch's own outputs, at each input the file
// has (two batch sizes for all but the transformer encoders: one compile
// of the symbolic batch). A
// directory torchvision* (torchtimm*) holds torchvision's (timm's) own
// models, which `export.py DIR torchvision` (`timm`) writes on the device
// machine for its device path (-paths=device); they are not committed.
func TestShapesTorchExports(t *testing.T) {
	// The models' work at the larger batch, for isHeavy (the encoder's
	// feed-forward layer is 2048 wide: its kernels take minutes in the
	// interpreter, PTX only on the host gpu paths).
	macs := map[string]int{"cnn_small": 150_000, "mlp_dynamic": 30_000, "gpt_block": 60_000, "transformer_encoder": 6_000_000,
		"resnet_basic": 2_900_000, "resnet_bottleneck": 2_600_000, "mobilenet_v2": 2_500_000, "se_net": 1_700_000,
		"pools": 50_000, "inception_dense": 6_800_000, "shufflenet": 3_200_000, "convnext": 3_000_000,
		"padding_modes": 1_000_000, "upsample_norms": 2_000_000}
	dirs, err := filepath.Glob(filepath.Join("..", "importers", "onnx", "testdata", "torch*"))
	if err != nil || len(dirs) < 2 {
		t.Fatalf("the exports' directories: %v, %v", dirs, err)
	}
	for _, d := range dirs {
		dir := filepath.Base(d)
		paths, err := filepath.Glob(filepath.Join(d, "*.onnx"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no exported models in %s: %v", dir, err)
		}
		for _, path := range paths {
			name := strings.TrimSuffix(filepath.Base(path), ".onnx")
			// export.py UNFUSED=1 and DYNHW=1: the same model (a dynamic
			// height and width: frontend.Load imports it per input size).
			work := macs[strings.TrimSuffix(strings.TrimSuffix(name, "_dynhw"), "_unfused")]
			if work == 0 {
				// A model of export.py's torchvision list, exported on the
				// device for its device path only: heavy.
				work = 1 << 40
				if !strings.HasPrefix(dir, "torchvision") && !strings.HasPrefix(dir, "torchtimm") {
					t.Errorf("%s: no work estimate for the new model %s", dir, name)
				}
			}
			t.Run(dir+"/"+name, func(t *testing.T) {
				stem := strings.TrimSuffix(path, ".onnx")
				var ins, wants []*frontend.Tensor
				for _, suffix := range []string{"", "2"} {
					if _, err := os.Stat(stem + ".in" + suffix + ".npy"); err != nil {
						continue
					}
					ins = append(ins, npyInput(t, stem+".in"+suffix+".npy"))
					wants = append(wants, npyInput(t, stem+".out"+suffix+".npy"))
				}
				forPaths(t, work, frontend.Float32, func(t *testing.T, opts frontend.Options) {
					m, err := frontend.Load(path, opts)
					if err != nil {
						t.Fatal(err)
					}
					for i, x := range ins {
						out, err := m.Call(x)
						called(t, name, err)
						closeTo(t, "output", out[0], wants[i].Shape(), wants[i].Float64s(), tolOf(frontend.Float32))
					}
				})
			})
		}
	}
}

// npyInput reads a float32 or int64 .npy file as a tensor.
func npyInput(t *testing.T, path string) *frontend.Tensor {
	t.Helper()
	arr, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shape := toInts(arr.Shape)
	switch arr.DType {
	case npy.Float32:
		vs, err := npy.ToSlice[float32](arr)
		if err != nil {
			t.Fatal(err)
		}
		return frontend.FromSlice(vs, shape...)
	case npy.Int64:
		vs, err := npy.ToSlice[int64](arr)
		if err != nil {
			t.Fatal(err)
		}
		return frontend.FromSlice(vs, shape...)
	}
	t.Fatalf("%s: dtype %v", path, arr.DType)
	return nil
}
