package nn_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/importers/onnx"
	"github.com/strata-ir/strata/importers/stablehlo"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

// TestShapesJAXExports runs the programs JAX 0.11 exported as StableHLO
// (importers/stablehlo/testdata: an MLP; a CNN with an NCHW convolution,
// a grouped strided one and an NHWC one with an HWIO kernel, max and
// padded sum reduce_window pooling; a causal attention block with an
// embedding gather), converted to graph ops, on every model path, and
// compares each with JAX's own output: a reference from outside Strata.
func TestShapesJAXExports(t *testing.T) {
	dir := filepath.Join("..", "importers", "stablehlo", "testdata")
	// The programs' work, for isHeavy: the attention block's kernels take
	// minutes in the interpreter.
	macs := map[string]int{"mlp": 10_000, "cnn": 100_000, "attention": 1_000_000}
	for _, name := range []string{"mlp", "cnn", "attention"} {
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(dir, name+".mlir"))
			if err != nil {
				t.Fatal(err)
			}
			var args []*interp.Tensor
			ins, _ := filepath.Glob(filepath.Join(dir, name+".in*.npy"))
			for _, in := range ins {
				args = append(args, npyTensor(t, in))
			}
			want := npyTensor(t, filepath.Join(dir, name+".out.npy"))
			wantF := frontend.FromSlice(want.Float64s(), toInts(want.Shape())...)
			forPaths(t, macs[name], frontend.Float32, func(t *testing.T, opts frontend.Options) {
				ctx := dialects.NewContext()
				mod, err := ir.Parse(ctx, string(text), ir.ParseOptions{Filename: name + ".mlir"})
				if err != nil {
					t.Fatal(err)
				}
				if err := stablehlo.Convert(ctx, mod); err != nil {
					t.Fatal(err)
				}
				// JAX's private functions (@relu) are calls: inlined, as
				// the frontend's graphs never hold any.
				pm, err := passes.Parse("builtin.module(inline)")
				if err != nil {
					t.Fatal(err)
				}
				if err := pm.Run(ctx, mod); err != nil {
					t.Fatal(err)
				}
				// The weights become arguments, as irc run and
				// frontend.Load bind them (onnx.LiftWeights): the nvptx
				// executor runs no host loops filling constant buffers.
				fn := ir.LookupSymbol(mod, ir.SymbolRef("main"))
				ds, err := onnx.LiftWeights(fn)
				if err != nil {
					t.Fatal(err)
				}
				in := slices.Clone(args)
				for _, d := range ds {
					w, err := interp.FromBits(d.Type.ElementType(), d.Type.Shape(), d.Bits)
					if err != nil {
						t.Fatal(err)
					}
					in = append(in, w)
				}
				b, ok := frontend.LookupBackend(opts.Backend)
				if !ok {
					t.Fatalf("no backend %s", opts.Backend)
				}
				exe, err := b.Compile(&frontend.Graph{Context: ctx, Module: mod, Func: "main", Mode: frontend.ModeDefault})
				if err != nil {
					t.Fatal(err)
				}
				out, err := exe.Run(in)
				called(t, name, err)
				if len(out) != 1 {
					t.Fatalf("%d results, want 1", len(out))
				}
				got := frontend.FromSlice(out[0].Float64s(), toInts(out[0].Shape())...)
				closeTo(t, fmt.Sprintf("%s vs JAX", name), got, wantF.Shape(), wantF.Float64s(), 1e-4)
			})
		})
	}
}

// npyTensor reads an .npy file (float32, int32 or int64).
func npyTensor(t *testing.T, path string) *interp.Tensor {
	t.Helper()
	arr, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	elem := map[npy.DType]ir.Type{npy.Float32: ir.F32, npy.Int32: ir.I32, npy.Int64: ir.I64}[arr.DType]
	v, err := interp.FromNPY(arr, ir.TensorOf(arr.Shape, elem))
	if err != nil {
		t.Fatal(err)
	}
	return v.(*interp.Tensor)
}

func toInts(xs []int64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}
