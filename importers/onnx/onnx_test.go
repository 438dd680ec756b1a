package onnx

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestMLPDynamicBatch imports Gemm(transB) → Relu → MatMul → Add →
// Softmax with a dim_param batch once and runs it at two batch sizes
// against a float64 reference.
func TestMLPDynamicBatch(t *testing.T) {
	b := newBuilder(17)
	b.input("x", TypeFloat, "batch", 6)
	w1 := b.weight("w1", 5, 6)
	b1 := b.weight("b1", 5)
	w2 := b.weight("w2", 5, 4)
	b2 := b.weight("b2", 4)
	b.node("Gemm", []string{"x", "w1", "b1"}, []string{"h"}, aInt("transB", 1))
	b.node("Relu", []string{"h"}, []string{"r"})
	b.node("MatMul", []string{"r", "w2"}, []string{"m"})
	b.node("Add", []string{"m", "b2"}, []string{"a"})
	b.node("Softmax", []string{"a"}, []string{"y"}, aInt("axis", -1))
	b.output("y")
	mod := importFile(t, b.write(t))
	if s := mod.String(); !strings.Contains(s, "#graph.dims<[s0, 6]>") {
		t.Fatalf("the batch is not a symbol:\n%s", s)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, batch := range []int64{2, 7} {
		x, xs := randTensor(t, rng, batch, 6)
		h := refMatmul(xs, refTranspose(w1, 5, 6), int(batch), 6, 5)
		for i := range h {
			h[i] = math.Max(h[i]+b1[i%5], 0)
		}
		m := refMatmul(h, w2, int(batch), 5, 4)
		for i := range m {
			m[i] += b2[i%4]
		}
		near(t, "mlp", call(t, mod, x)[0], []int64{batch, 4}, refSoftmaxRows(m, 4), 1e-5)
	}
}

// TestCNN imports Conv (groups, stride, pads) → BatchNormalization → Relu
// → MaxPool, AveragePool (pads, count_include_pad = 0) and
// GlobalAveragePool → Flatten, with a dynamic batch.
func TestCNN(t *testing.T) {
	b := newBuilder(13)
	b.input("x", TypeFloat, "N", 4, 9, 9)
	w := b.weight("w", 6, 2, 3, 3)
	bias := b.weight("bias", 6)
	scale, shift := b.weight("scale", 6), b.weight("shift", 6)
	mean := b.weight("mean", 6)
	varr := make([]float32, 6)
	for i := range varr {
		varr[i] = float32(0.5 + float64(i)/10)
	}
	b.floats("var", []int64{6}, varr...)
	b.node("Conv", []string{"x", "w", "bias"}, []string{"c"}, aInts("kernel_shape", 3, 3), aInts("strides", 2, 2), aInts("pads", 1, 1, 1, 1), aInt("group", 2))
	b.node("BatchNormalization", []string{"c", "scale", "shift", "mean", "var"}, []string{"bn"}, aFloat("epsilon", 1e-3))
	b.node("Relu", []string{"bn"}, []string{"r"})
	b.node("MaxPool", []string{"r"}, []string{"mp"}, aInts("kernel_shape", 3, 3), aInts("strides", 2, 2), aInts("pads", 1, 1, 1, 1))
	b.node("AveragePool", []string{"r"}, []string{"ap"}, aInts("kernel_shape", 2, 2), aInts("pads", 0, 0, 1, 1))
	b.node("GlobalAveragePool", []string{"r"}, []string{"gp"})
	b.node("Flatten", []string{"gp"}, []string{"f"})
	b.output("mp", "ap", "f")
	mod := importFile(t, b.write(t))
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int64{1, 3} {
		x, xs := randTensor(t, rng, n, 4, 9, 9)
		c, oh, ow := refConv(xs, int(n), 4, 9, 9, w, 6, 3, 3, bias, 2, 1, 2)
		plane := oh * ow
		for i := range c {
			ch := (i / plane) % 6
			v := (c[i]-mean[ch])/math.Sqrt(float64(varr[ch])+float64(float32(1e-3)))*scale[ch] + shift[ch]
			c[i] = math.Max(v, 0)
		}
		got := call(t, mod, x)
		mp, mh, mw := refPool(c, int(n)*6, oh, ow, 3, 2, [4]int{1, 1, 1, 1}, false)
		near(t, "maxpool", got[0], []int64{n, 6, int64(mh), int64(mw)}, mp, 1e-5)
		ap, ah, aw := refPool(c, int(n)*6, oh, ow, 2, 1, [4]int{0, 0, 1, 1}, true)
		near(t, "avgpool", got[1], []int64{n, 6, int64(ah), int64(aw)}, ap, 1e-5)
		gp := make([]float64, n*6)
		for i := range c {
			gp[i/plane] += c[i] / float64(plane)
		}
		near(t, "global pool", got[2], []int64{n, 6}, gp, 1e-5)
	}
}

// TestShapeFolding: a transformer-style block whose reshape target comes
// from Shape → Gather → Unsqueeze → Concat of a dynamic batch, with
// LayerNormalization, an erf GELU, Pow and Sqrt, Where on Equal, Expand,
// Cast, ConstantOfShape and Range. The shape computation folds at import:
// no integer op remains.
func TestShapeFolding(t *testing.T) {
	b := newBuilder(18)
	b.input("x", TypeFloat, "B", 3, 8)
	lw, lb := b.weight("lw", 8), b.weight("lb", 8)
	b.ints("zero", 0)
	b.ints("minus1", -1)
	b.ints("axes0", 0)
	b.ints("shape3", 3, 8)
	b.floats("half", nil, 0.5)
	b.floats("one", nil, 1)
	b.floats("rsqrt2", nil, float32(1/math.Sqrt2))
	b.floats("two", nil, 2)
	b.node("Shape", []string{"x"}, []string{"s"})
	b.node("Gather", []string{"s", "zero"}, []string{"bdim"}, aInt("axis", 0))
	b.node("Concat", []string{"bdim", "minus1"}, []string{"flat"}, aInt("axis", 0))
	b.node("LayerNormalization", []string{"x", "lw", "lb"}, []string{"ln"}, aInt("axis", -1), aFloat("epsilon", 1e-5))
	// gelu(ln) = ln · 0.5 · (1 + erf(ln/√2))
	b.node("Mul", []string{"ln", "rsqrt2"}, []string{"g0"})
	b.node("Erf", []string{"g0"}, []string{"g1"})
	b.node("Add", []string{"g1", "one"}, []string{"g2"})
	b.node("Mul", []string{"ln", "g2"}, []string{"g3"})
	b.node("Mul", []string{"g3", "half"}, []string{"gelu"})
	// sqrt(gelu² + 1)
	b.node("Pow", []string{"gelu", "two"}, []string{"sq"})
	b.node("Add", []string{"sq", "one"}, []string{"sq1"})
	b.node("Sqrt", []string{"sq1"}, []string{"rt"})
	b.node("Reshape", []string{"rt", "flat"}, []string{"y"})
	// A mask from Range, Cast, Equal, Where and Expand over the batch.
	b.node("ConstantOfShape", []string{"shape3"}, []string{"zeros"}, aTensor("value", &Tensor{Dims: []int64{1}, DataType: TypeFloat, FloatData: []float32{0}}))
	b.node("Range", []string{"zero_s", "eight", "one_i"}, []string{"rng"})
	b.g.Initializers = append(b.g.Initializers,
		&Tensor{Name: "zero_s", DataType: TypeInt64, Int64Data: []int64{0}},
		&Tensor{Name: "eight", DataType: TypeInt64, Int64Data: []int64{8}},
		&Tensor{Name: "one_i", DataType: TypeInt64, Int64Data: []int64{1}})
	b.ints("four", 4)
	b.node("Less", []string{"rng", "four"}, []string{"lt"})
	b.node("Cast", []string{"lt"}, []string{"ltf"}, aInt("to", TypeFloat))
	b.node("Unsqueeze", []string{"ltf", "axes0"}, []string{"ltf2"})
	b.node("Add", []string{"zeros", "ltf2"}, []string{"mask"}) // [3, 8]
	b.node("Concat", []string{"bdim", "shape3"}, []string{"full"}, aInt("axis", 0))
	b.node("Expand", []string{"mask", "full"}, []string{"emask"})
	b.node("Equal", []string{"emask", "one"}, []string{"keep"})
	b.node("Where", []string{"keep", "x", "zeros"}, []string{"masked"})
	b.output("y", "masked")
	mod := importFile(t, b.write(t))
	mod.WalkPost(func(op *ir.Operation) {
		if op.Name() != "graph.constant" && op.NumResults() == 1 && ir.ElementTypeOf(op.Result(0).Type()) == ir.I64 {
			t.Errorf("an integer shape computation was not folded: %s", op)
		}
	})
	rng := rand.New(rand.NewPCG(5, 5))
	for _, batch := range []int64{2, 5} {
		x, xs := randTensor(t, rng, batch, 3, 8)
		ln := refLayerNormRows(xs, 8, lw, lb, 1e-5)
		want := make([]float64, len(ln))
		for i, v := range ln {
			g := v * 0.5 * (1 + math.Erf(v/math.Sqrt2))
			want[i] = math.Sqrt(g*g + 1)
		}
		masked := make([]float64, len(xs))
		for i, v := range xs {
			if i%8 < 4 {
				masked[i] = v
			}
		}
		got := call(t, mod, x)
		near(t, "block", got[0], []int64{batch, 24}, want, 1e-5)
		near(t, "mask", got[1], []int64{batch, 3, 8}, masked, 0)
	}
}

// TestShapeOps: Slice (negative steps, clamped ends), Split, Transpose,
// Squeeze, Gather of a tensor, Concat, Tile, Pad and Trilu.
func TestShapeOps(t *testing.T) {
	b := newBuilder(13)
	b.input("x", TypeFloat, 4, 6)
	b.ints("st", 5, 1)
	b.ints("en", -100, 100)
	b.ints("ax", 1, 0)
	b.ints("stp", -2, 2)
	b.ints("split", 2, 4)
	b.ints("idx", 3, 0, 3)
	b.ints("reps", 1, 2)
	b.ints("pads", 0, 1, 1, 0)
	b.ints("sq", 0)
	b.node("Slice", []string{"x", "st", "en", "ax", "stp"}, []string{"sl"})        // rows 1,3; cols 5,3,1
	b.node("Split", []string{"x", "split"}, []string{"p0", "p1"}, aInt("axis", 1)) // [4,2], [4,4]
	b.node("Transpose", []string{"p0"}, []string{"tp"}, aInts("perm", 1, 0))       // [2,4]
	b.node("Gather", []string{"x", "idx"}, []string{"ga"}, aInt("axis", 0))        // rows 3,0,3
	b.node("Concat", []string{"p1", "p0"}, []string{"cc"}, aInt("axis", 1))        // [4,6] rotated
	b.node("Tile", []string{"tp", "reps"}, []string{"ti"})                         // [2,8]
	b.node("Pad", []string{"ti", "pads"}, []string{"pd"})                          // [3,9]
	b.node("Trilu", []string{"x"}, []string{"tr"}, aInt("upper", 0))
	b.node("Unsqueeze", []string{"tp", "sq"}, []string{"u"})
	b.node("Squeeze", []string{"u", "sq"}, []string{"sqz"})
	b.output("sl", "ga", "cc", "pd", "tr", "sqz")
	mod := importFile(t, b.write(t))
	x, xs := randTensor(t, rand.New(rand.NewPCG(9, 9)), 4, 6)
	at := func(i, j int) float64 { return xs[i*6+j] }
	got := call(t, mod, x)
	var sl []float64
	for _, i := range []int{1, 3} {
		for _, j := range []int{5, 3, 1} {
			sl = append(sl, at(i, j))
		}
	}
	near(t, "slice", got[0], []int64{2, 3}, sl, 0)
	var ga []float64
	for _, i := range []int{3, 0, 3} {
		ga = append(ga, xs[i*6:i*6+6]...)
	}
	near(t, "gather", got[1], []int64{3, 6}, ga, 0)
	var cc []float64
	for i := range 4 {
		cc = append(cc, xs[i*6+2:i*6+6]...)
		cc = append(cc, xs[i*6:i*6+2]...)
	}
	near(t, "concat", got[2], []int64{4, 6}, cc, 0)
	pd := make([]float64, 3*9)
	for i := range 2 {
		for j := range 8 {
			pd[i*9+j+1] = at(j%4, i)
		}
	}
	near(t, "tile+pad", got[3], []int64{3, 9}, pd, 0)
	tr := make([]float64, 24)
	for i := range 4 {
		for j := range 6 {
			if j <= i {
				tr[i*6+j] = at(i, j)
			}
		}
	}
	near(t, "trilu", got[4], []int64{4, 6}, tr, 0)
	var tp []float64
	for i := range 2 {
		for j := range 4 {
			tp = append(tp, at(j, i))
		}
	}
	near(t, "squeeze", got[5], []int64{2, 4}, tp, 0)
}

// TestUnsupported: an unknown operator is an error naming the node, its
// op_type and the opset; so is a foreign domain.
func TestUnsupported(t *testing.T) {
	for _, tc := range []struct {
		op, domain, want string
	}{
		{"NonMaxSuppression", "", `node 1 "NonMaxSuppression_y" (op_type NonMaxSuppression, opset 17): unsupported operator`},
		{"FusedGemm", "com.microsoft", `node 1 "FusedGemm_y" (op_type FusedGemm, domain "com.microsoft", opset 17): unsupported operator domain`},
	} {
		b := newBuilder(17)
		b.input("x", TypeFloat, 2, 2)
		b.node("Relu", []string{"x"}, []string{"r"})
		b.node(tc.op, []string{"r"}, []string{"y"})
		b.g.Nodes[1].Domain = tc.domain
		b.output("y")
		_, err := Import(dialects.NewContext(), b.write(t), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "model.onnx: ") {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
	b := newBuilder(9)
	b.input("x", TypeFloat, 2)
	b.output("x")
	if _, err := Import(dialects.NewContext(), b.write(t), Options{}); err == nil || !strings.Contains(err.Error(), "opset 9 is not supported") {
		t.Errorf("opset 9: %v", err)
	}
}

// TestBadFiles: truncated or garbage files are errors, never panics.
func TestBadFiles(t *testing.T) {
	b := newBuilder(17)
	b.input("x", TypeFloat, 2, 3)
	b.weight("w", 3, 2)
	b.node("MatMul", []string{"x", "w"}, []string{"y"})
	b.output("y")
	data := b.model().Marshal()
	for n := 0; n < len(data); n += 7 {
		m, err := DecodeModel(data[:n])
		if err == nil {
			_, err = ImportModel(dialects.NewContext(), m, "cut.onnx", t.TempDir(), Options{})
		}
		_ = err // any result but a panic
	}
	if _, err := DecodeModel([]byte("not a model at all")); err == nil {
		t.Error("garbage decoded")
	}
}

// TestTextImport: WriteMLIR's streamed text parses back to a module that
// computes what the in-memory import computes, with weights from external
// data and typed fields.
func TestTextImport(t *testing.T) {
	dir := t.TempDir()
	b := newBuilder(17)
	b.input("x", TypeFloat, "n", 80)
	w := b.weight("w", 80, 70) // 5600 elements: streamed
	raw := b.g.Initializers[0].RawData
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), append(make([]byte, 16), raw...), 0o644); err != nil {
		t.Fatal(err)
	}
	b.g.Initializers[0] = &Tensor{Name: "w", Dims: []int64{80, 70}, DataType: TypeFloat,
		External: map[string]string{"location": "w.bin", "offset": "16", "length": "22400"}}
	big := make([]float32, 70*72)
	for i := range big {
		big[i] = float32(i%13) - 6
	}
	b.floats("v", []int64{70, int64(len(big)) / 70}, big...) // float_data, streamed
	b.node("MatMul", []string{"x", "w"}, []string{"h"})
	b.node("MatMul", []string{"h", "v"}, []string{"y"})
	b.output("y")
	path := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(path, b.model().Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	ctx := dialects.NewContext()
	if err := WriteMLIR(&buf, ctx, path, Options{}); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if strings.Contains(text, weightAttr) || strings.Count(text, `dense<"0x`) != 2 {
		t.Fatalf("placeholders were not replaced:\n%.2000s", text)
	}
	parsed, err := ir.Parse(ctx, text, ir.ParseOptions{Filename: "m.mlir"})
	if err == nil {
		err = ir.Verify(parsed)
	}
	if err != nil {
		t.Fatal(err)
	}
	direct := importFile(t, path)
	x, xs := randTensor(t, rand.New(rand.NewPCG(1, 2)), 3, 80)
	h := refMatmul(xs, w, 3, 80, 70)
	vs := make([]float64, len(big))
	for i, v := range big {
		vs[i] = float64(v)
	}
	want := refMatmul(h, vs, 3, 70, len(big)/70)
	for name, mod := range map[string]*ir.Operation{"text": parsed, "direct": direct} {
		near(t, name, call(t, mod, x)[0], []int64{3, int64(len(big)) / 70}, want, 1e-4)
	}
	// A bad external location is refused.
	b.g.Initializers[0].External["location"] = "../w.bin"
	if err := os.WriteFile(path, b.model().Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, path, Options{}); err == nil || !strings.Contains(err.Error(), "inside the model's directory") {
		t.Errorf("external data outside the directory: %v", err)
	}
}

// TestTorchExports runs models exported by PyTorch (made by
// testdata/export.py: testdata/torch by PyTorch 1.13's exporter,
// testdata/torch211 and torch211cnn by PyTorch 2.11's dynamo exporter,
// weights in external data files, torch211ts by its TorchScript
// exporter; both fold a batch norm after a convolution into it) and compares
// with PyTorch's outputs, at each batch size a file has, within 1e-3 of
// 1+|want| (measured: at most 7.2e-7 but for upsample_norms' 2.2e-6, whose
// instance and group norm statistics PyTorch sums otherwise).
func TestTorchExports(t *testing.T) {
	paths, _ := filepath.Glob("testdata/torch*/*.onnx")
	if len(paths) == 0 {
		t.Fatal("no exported models in testdata/torch")
	}
	for _, path := range paths {
		base := strings.TrimSuffix(path, ".onnx")
		t.Run(filepath.Base(filepath.Dir(base))+"/"+filepath.Base(base), func(t *testing.T) {
			// A model with a dynamic height and width (export.py DYNHW=1)
			// pools over symbolic sizes: imported per input size, as irc
			// run and frontend.Load do.
			mod, err := Import(dialects.NewContext(), path, Options{})
			sized := errors.Is(err, ErrSymbolicSizes)
			if err != nil && !sized {
				t.Fatalf("import: %v", err)
			}
			if sized != strings.HasSuffix(base, "_dynhw") {
				t.Fatalf("import per input size: %v (err %v)", sized, err)
			}
			for _, suffix := range []string{"", "2"} {
				in, err := readNPY(base + ".in" + suffix + ".npy")
				if os.IsNotExist(err) && suffix == "2" {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				want, err := readNPY(base + ".out" + suffix + ".npy")
				if err != nil {
					t.Fatal(err)
				}
				if sized {
					m, err := ReadModel(path)
					if err != nil {
						t.Fatal(err)
					}
					dims, err := DimsFor(m, [][]int64{in.Shape()})
					if err != nil {
						t.Fatal(err)
					}
					if mod, err = Import(dialects.NewContext(), path, Options{Dims: dims}); err != nil {
						t.Fatalf("import for %v: %v", dims, err)
					}
				}
				near(t, "output"+suffix, call(t, mod, in)[0], want.Shape(), want.Float64s(), 1e-3)
			}
		})
	}
}

func readNPY(path string) (*interp.Tensor, error) {
	arr, err := npyRead(path)
	if err != nil {
		return nil, err
	}
	return arr, nil
}

// FuzzDecodeModel: any bytes decode and import to a module or an error,
// never a panic.
func FuzzDecodeModel(f *testing.F) {
	b := newBuilder(17)
	b.input("x", TypeFloat, "n", 3)
	b.weight("w", 3, 2)
	b.ints("shape", -1, 2)
	b.node("MatMul", []string{"x", "w"}, []string{"h"})
	b.node("Reshape", []string{"h", "shape"}, []string{"y"})
	b.output("y")
	f.Add(b.model().Marshal())
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeModel(data)
		if err != nil {
			return
		}
		_, _ = ImportModel(dialects.NewContext(), m, "fuzz.onnx", t.TempDir(), Options{})
	})
}

// TestDims: a reshape needing two symbolic sizes is refused; Dims (as
// DimsFor derives them from input shapes) specialises the import.
func TestDims(t *testing.T) {
	b := newBuilder(17)
	b.input("x", TypeFloat, "B", "T", 8)
	b.ints("i0", 0)
	b.ints("i1", 1)
	b.ints("split", 2, 4)
	b.node("Shape", []string{"x"}, []string{"s"})
	b.node("Gather", []string{"s", "i0"}, []string{"b"}, aInt("axis", 0))
	b.node("Gather", []string{"s", "i1"}, []string{"t"}, aInt("axis", 0))
	b.node("Concat", []string{"b", "t", "split"}, []string{"shape"}, aInt("axis", 0))
	b.node("Reshape", []string{"x", "shape"}, []string{"y"})
	b.output("y")
	path := b.write(t)
	if _, err := Import(dialects.NewContext(), path, Options{}); err == nil || !strings.Contains(err.Error(), "--dim NAME=SIZE") {
		t.Fatalf("two symbolic sizes: %v", err)
	}
	m, err := ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	dims, err := DimsFor(m, [][]int64{{2, 3, 8}})
	if err != nil || dims["B"] != 2 || dims["T"] != 3 {
		t.Fatalf("DimsFor: %v, %v", dims, err)
	}
	mod, err := Import(dialects.NewContext(), path, Options{Dims: map[string]int64{"T": 3}})
	if err != nil {
		t.Fatal(err)
	}
	x, xs := randTensor(t, rand.New(rand.NewPCG(4, 4)), 5, 3, 8)
	near(t, "reshape", call(t, mod, x)[0], []int64{5, 3, 2, 4}, xs, 0)
	if _, err := DimsFor(m, [][]int64{{2, 3}}); err == nil {
		t.Error("a wrong rank was accepted")
	}
}

// TestBadCNNInput: a CNN node whose shapes do not fit (issue 20's bad
// input) is an import error naming the node, before anything runs; a
// dynamic size known only at run time fails there, at the node.
func TestBadCNNInput(t *testing.T) {
	stats := func(b *builder, c int64) {
		for _, n := range []string{"s", "h", "m", "v"} {
			b.weight(n, c)
		}
	}
	for _, tc := range []struct {
		name, want string
		build      func(b *builder)
	}{
		{"channels", `"Conv_y" (op_type Conv, opset 17): 'graph.conv2d' op weight dim 1 is 3 but the input has 4 channels`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.weight("w", 6, 3, 3, 3)
			b.node("Conv", []string{"x", "w"}, []string{"y"})
		}},
		{"groups", "output channels 5 are not divisible by groups 2", func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.weight("w", 5, 2, 3, 3)
			b.node("Conv", []string{"x", "w"}, []string{"y"}, aInt("group", 2))
		}},
		{"kernel larger", "does not fit the padded input", func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 2, 2)
			b.weight("w", 6, 4, 3, 3)
			b.node("Conv", []string{"x", "w"}, []string{"y"}, aInts("pads", 0, 0, 0, 0))
		}},
		{"kernel_shape", `"Conv_y" (op_type Conv, opset 17): kernel_shape [5 5] differs from the weight's spatial shape [3 3]`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.weight("w", 6, 4, 3, 3)
			b.node("Conv", []string{"x", "w"}, []string{"y"}, aInts("kernel_shape", 5, 5))
		}},
		{"stride 0", "kernel [3 3], strides [0 0], dilations [1 1]: want each ≥ 1", func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.weight("w", 6, 4, 3, 3)
			b.node("Conv", []string{"x", "w"}, []string{"y"}, aInts("strides", 0, 0))
		}},
		// Before the check the strides divided by zero (a panic): in
		// auto_pad's sizes and in pooling's output size.
		{"stride 0 same_upper", `"Conv_y" (op_type Conv, opset 17): kernel [3 3], strides [1 0], dilations [1 1]: want each ≥ 1`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.weight("w", 6, 4, 3, 3)
			b.node("Conv", []string{"x", "w"}, []string{"y"}, aInts("strides", 1, 0), aStr("auto_pad", "SAME_UPPER"))
		}},
		{"pool stride 0", `"MaxPool_y" (op_type MaxPool, opset 17): kernel [2 2], strides [0 0], dilations [1 1]: want each ≥ 1`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.node("MaxPool", []string{"x"}, []string{"y"}, aInts("kernel_shape", 2, 2), aInts("strides", 0, 0))
		}},
		{"pool kernel 0", `"AveragePool_y" (op_type AveragePool, opset 17): kernel [0 2], strides [1 1], dilations [1 1]: want each ≥ 1`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.node("AveragePool", []string{"x"}, []string{"y"}, aInts("kernel_shape", 0, 2))
		}},
		// Before, windows in the padding only gave −∞ (max) or 0 (average
		// without the padding) silently.
		{"pool pads past kernel", `"MaxPool_y" (op_type MaxPool, opset 17): pads [0 3 0 3] must be smaller than the kernel [2 2]`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.node("MaxPool", []string{"x"}, []string{"y"}, aInts("kernel_shape", 2, 2), aInts("pads", 0, 3, 0, 3))
		}},
		{"average pads past kernel", `pads [2 2 2 2] must be smaller than the kernel [2 2]`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.node("AveragePool", []string{"x"}, []string{"y"}, aInts("kernel_shape", 2, 2), aInts("pads", 2, 2, 2, 2), aInt("count_include_pad", 0))
		}},
		{"negative pads", "negative pads [-1 -1 -1 -1]", func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 9, 9)
			b.weight("w", 6, 4, 3, 3)
			b.node("Conv", []string{"x", "w"}, []string{"y"}, aInts("pads", -1, -1, -1, -1))
		}},
		{"pool larger", `"MaxPool_y" (op_type MaxPool, opset 17): the kernel [3 3] does not fit the padded input [2 2]`, func(b *builder) {
			b.input("x", TypeFloat, 1, 4, 2, 2)
			b.node("MaxPool", []string{"x"}, []string{"y"}, aInts("kernel_shape", 3, 3))
		}},
		{"batch-norm channels", `"BatchNormalization_y" (op_type BatchNormalization, opset 17): 'graph.mul' op operands 0 and 1 are not broadcast-compatible`, func(b *builder) {
			b.input("x", TypeFloat, 2, 4, 3, 3)
			stats(b, 5)
			b.node("BatchNormalization", []string{"x", "s", "h", "m", "v"}, []string{"y"})
		}},
		{"flatten to linear", `"Gemm_y" (op_type Gemm, opset 17): 'graph.matmul' op inner dimensions differ: lhs dim 1 is 5, rhs dim 0 is 4`, func(b *builder) {
			b.input("x", TypeFloat, 2, 5)
			b.weight("w", 4, 3)
			b.node("Gemm", []string{"x", "w"}, []string{"y"})
		}},
		{"non-integer size", "cannot reshape tensor<2x5xf32> (10 elements)", func(b *builder) {
			b.input("x", TypeFloat, 2, 5)
			b.ints("s", 3, -1)
			b.node("Reshape", []string{"x", "s"}, []string{"y"})
		}},
	} {
		b := newBuilder(17)
		tc.build(b)
		b.output("y")
		_, err := Import(dialects.NewContext(), b.write(t), Options{})
		if err == nil || !strings.HasPrefix(err.Error(), "model.onnx: node 0 ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one at node 0 containing %q", tc.name, err, tc.want)
		}
	}
	// A kernel larger than an input known only at run time: the run
	// fails at the node.
	b := newBuilder(17)
	b.input("x", TypeFloat, "N", 4, "H", "W")
	b.weight("w", 6, 4, 3, 3)
	b.node("Conv", []string{"x", "w"}, []string{"y"})
	b.output("y")
	mod := importFile(t, b.write(t))
	x, _ := randTensor(t, rand.New(rand.NewPCG(1, 1)), 1, 4, 2, 2)
	if _, err := interp.New(mod).Call("main", x); err == nil || !strings.HasPrefix(err.Error(), `loc("Conv_y"): error: `) || !strings.Contains(err.Error(), "does not fit the input") {
		t.Errorf("a 2x2 input to a 3x3 kernel: %v, want an error at the Conv node", err)
	}
}

// TestDropoutTrainingMode: Dropout imports as the identity in evaluation
// mode (no training_mode, or a constant false) and is an error with a
// constant true or a computed training_mode (random masks: another model).
func TestDropoutTrainingMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode *Tensor // nil: no training_mode input
		in   bool    // training_mode a graph input
		want string  // "": imports
	}{
		{"absent", nil, false, ""},
		{"false", &Tensor{Name: "mode", DataType: TypeBool, Int32Data: []int32{0}}, false, ""},
		{"true", &Tensor{Name: "mode", DataType: TypeBool, Int32Data: []int32{1}}, false, "training_mode = true (random masks) is not supported"},
		{"input", nil, true, "training_mode (input 2) must be a constant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(17)
			b.input("x", TypeFloat, 2, 3)
			ins := []string{"x"}
			if tc.mode != nil {
				b.g.Initializers = append(b.g.Initializers, tc.mode)
				b.floats("ratio", nil, 0.5)
				ins = append(ins, "ratio", "mode")
			}
			if tc.in {
				b.input("mode", TypeBool)
				b.floats("ratio", nil, 0.5)
				ins = append(ins, "ratio", "mode")
			}
			b.node("Dropout", ins, []string{"y"})
			b.output("y")
			mod, err := Import(dialects.NewContext(), b.write(t), Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				x, xs := randTensor(t, rand.New(rand.NewPCG(1, 1)), 2, 3)
				near(t, "dropout", call(t, mod, x)[0], []int64{2, 3}, xs, 0)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "op_type Dropout") {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestPadModes: Pad's reflect, edge and wrap modes (opset 18: axes as an
// input) on both spatial axes of a dynamic-batch input, against the
// index maps numpy.pad's modes of those names give (written out by
// hand); a reflection as wide as the axis, and a padded symbolic axis,
// are errors naming the node.
func TestPadModes(t *testing.T) {
	// Axis 2 (size 3) padded by (2, 1), axis 3 (size 4) by (3, 2): the
	// source index of each output row and column.
	maps := map[string][2][]int{
		"reflect": {{2, 1, 0, 1, 2, 1}, {3, 2, 1, 0, 1, 2, 3, 2, 1}},
		"edge":    {{0, 0, 0, 1, 2, 2}, {0, 0, 0, 0, 1, 2, 3, 3, 3}},
		"wrap":    {{1, 2, 0, 1, 2, 0}, {1, 2, 3, 0, 1, 2, 3, 0, 1}},
	}
	for _, mode := range []string{"reflect", "edge", "wrap"} {
		b := newBuilder(18)
		b.input("x", TypeFloat, "N", 2, 3, 4)
		b.ints("pads", 2, 3, 1, 2)
		b.ints("axes", -2, 3)
		b.node("Pad", []string{"x", "pads", "", "axes"}, []string{"y"}, aStr("mode", mode))
		b.output("y")
		mod := importFile(t, b.write(t))
		rows, cols := maps[mode][0], maps[mode][1]
		for _, n := range []int64{1, 3} {
			x, xs := randTensor(t, rand.New(rand.NewPCG(uint64(n), 9)), n, 2, 3, 4)
			var want []float64
			for p := range int(n) * 2 {
				for _, r := range rows {
					for _, c := range cols {
						want = append(want, xs[(p*3+r)*4+c])
					}
				}
			}
			near(t, mode, call(t, mod, x)[0], []int64{n, 2, 6, 9}, want, 0)
		}
	}
	for _, tc := range []struct {
		mode string
		pads []int64
		want string
	}{
		{"reflect", []int64{0, 0, 3, 0, 0, 0, 0, 0}, "mode reflect pads axis 2 of size 3 by 3 and 0: want pads smaller than the size"},
		{"edge", []int64{1, 0, 0, 0, 0, 0, 0, 0}, "mode edge needs a static size on padded axis 0, not s0"},
		{"circular", []int64{0, 0, 0, 0, 0, 0, 0, 0}, `mode "circular" is not one of constant, reflect, edge, wrap`},
	} {
		b := newBuilder(13)
		b.input("x", TypeFloat, "N", 2, 3, 4)
		b.ints("pads", tc.pads...)
		b.node("Pad", []string{"x", "pads"}, []string{"y"}, aStr("mode", tc.mode))
		b.output("y")
		_, err := Import(dialects.NewContext(), b.write(t), Options{})
		if err == nil || !strings.HasPrefix(err.Error(), `model.onnx: node 0 "Pad_y"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want an error naming the node and %q", tc.mode, tc.pads, err, tc.want)
		}
	}
}

// TestMoreActivations: PRelu (a per-channel slope), Elu, Selu, Celu,
// Mish, Softsign and ThresholdedRelu against their float64 formulas, on
// a dynamic-batch input whose values cross each one's bends.
func TestMoreActivations(t *testing.T) {
	b := newBuilder(17)
	b.input("x", TypeFloat, "N", 3, 4)
	slope := b.weight("slope", 3, 1)
	b.node("PRelu", []string{"x", "slope"}, []string{"prelu"})
	b.node("Elu", []string{"x"}, []string{"elu"}, aFloat("alpha", 0.7))
	b.node("Selu", []string{"x"}, []string{"selu"})
	b.node("Celu", []string{"x"}, []string{"celu"}, aFloat("alpha", 1.5))
	b.node("Mish", []string{"x"}, []string{"mish"})
	b.node("Softsign", []string{"x"}, []string{"softsign"})
	b.node("ThresholdedRelu", []string{"x"}, []string{"thr"}, aFloat("alpha", 0.5))
	names := []string{"prelu", "elu", "selu", "celu", "mish", "softsign", "thr"}
	b.output(names...)
	mod := importFile(t, b.write(t))
	const selA, selG = 1.67326319217681884765625, 1.05070102214813232421875
	f := map[string]func(v float64, i int) float64{
		"prelu": func(v float64, i int) float64 {
			if v < 0 {
				return v * slope[(i/4)%3]
			}
			return v
		},
		"elu": func(v float64, _ int) float64 {
			if v < 0 {
				return 0.7 * (math.Exp(v) - 1)
			}
			return v
		},
		"selu": func(v float64, _ int) float64 {
			if v < 0 {
				return selG * selA * (math.Exp(v) - 1)
			}
			return selG * v
		},
		"celu":     func(v float64, _ int) float64 { return math.Max(0, v) + math.Min(0, 1.5*(math.Exp(v/1.5)-1)) },
		"mish":     func(v float64, _ int) float64 { return v * math.Tanh(math.Log1p(math.Exp(v))) },
		"softsign": func(v float64, _ int) float64 { return v / (1 + math.Abs(v)) },
		"thr": func(v float64, _ int) float64 {
			if v > 0.5 {
				return v
			}
			return 0
		},
	}
	for _, n := range []int64{1, 3} {
		x, xs := randTensor(t, rand.New(rand.NewPCG(uint64(n), 5)), n, 3, 4)
		got := call(t, mod, x)
		for k, name := range names {
			want := make([]float64, len(xs))
			for i, v := range xs {
				want[i] = f[name](v, i)
			}
			near(t, name, got[k], []int64{n, 3, 4}, want, 1e-5)
		}
	}
}

// TestArgMinIntegers: ArgMin of integers picks the type's minimum (−x of
// the minimum wraps to the minimum itself: ArgMin takes the first
// maximum of ^x) and the first of equal minima.
func TestArgMinIntegers(t *testing.T) {
	for _, tc := range []struct {
		onnx int32
		elem ir.Type
		min  int64
	}{{TypeInt32, ir.I32, math.MinInt32}, {TypeInt64, ir.I64, math.MinInt64}} {
		b := newBuilder(13)
		b.input("x", tc.onnx, 2, 4)
		b.node("ArgMin", []string{"x"}, []string{"amin"}, aInt("axis", 1), aInt("keepdims", 0))
		b.output("amin")
		b.g.Outputs[0].ElemType = TypeInt64
		mod := importFile(t, b.write(t))
		x, err := interp.FromInt64s(tc.elem, []int64{2, 4}, []int64{5, tc.min, -3, tc.min, 7, 0, -1, 0})
		if err != nil {
			t.Fatal(err)
		}
		near(t, fmt.Sprintf("argmin %v", tc.elem), call(t, mod, x)[0], []int64{2}, []float64{1, 2}, 0)
	}
}

// TestArgMaxNorms: ArgMax and ArgMin (keepdims both ways, ties to the
// first index), InstanceNormalization, and GroupNormalization with
// per-channel (opset 21) and per-group (opset 18) scale and bias, on a
// dynamic batch, against float64 references.
func TestArgMaxNorms(t *testing.T) {
	for _, opset := range []int64{18, 21} {
		b := newBuilder(opset)
		b.input("x", TypeFloat, "N", 4, 3, 2)
		b.node("ArgMax", []string{"x"}, []string{"amax"}, aInt("axis", 1), aInt("keepdims", 0))
		b.node("ArgMin", []string{"x"}, []string{"amin"}, aInt("axis", -1))
		is, ib := b.weight("is", 4), b.weight("ib", 4)
		b.node("InstanceNormalization", []string{"x", "is", "ib"}, []string{"inorm"}, aFloat("epsilon", 1e-3))
		per := int64(4)
		if opset == 18 {
			per = 2
		}
		gs, gb := b.weight("gs", per), b.weight("gb", per)
		b.node("GroupNormalization", []string{"x", "gs", "gb"}, []string{"gnorm"}, aInt("num_groups", 2))
		b.output("amax", "amin", "inorm", "gnorm")
		b.g.Outputs[0].ElemType, b.g.Outputs[1].ElemType = TypeInt64, TypeInt64
		mod := importFile(t, b.write(t))
		for _, n := range []int64{1, 2} {
			x, xs := randTensor(t, rand.New(rand.NewPCG(uint64(n), uint64(opset))), n, 4, 3, 2)
			xs[1] = xs[0] // a tie along the last axis: the first index wins
			x, _ = interp.FromFloat64s(ir.F32, []int64{n, 4, 3, 2}, xs)
			got := call(t, mod, x)
			at := func(p, c, h, w int) float64 { return xs[((p*4+c)*3+h)*2+w] }
			var amax, amin []float64
			for p := range int(n) {
				for h := range 3 {
					for w := range 2 {
						best := 0
						for c := range 4 {
							if at(p, c, h, w) > at(p, best, h, w) {
								best = c
							}
						}
						amax = append(amax, float64(best))
					}
				}
			}
			for i := 0; i < len(xs); i += 2 {
				amin = append(amin, map[bool]float64{true: 0, false: 1}[xs[i] <= xs[i+1]])
			}
			near(t, "argmax", got[0], []int64{n, 3, 2}, amax, 0)
			near(t, "argmin", got[1], []int64{n, 4, 3, 1}, amin, 0)
			norm := func(vals []float64, eps float64) []float64 {
				var m, v float64
				for _, e := range vals {
					m += e / float64(len(vals))
				}
				for _, e := range vals {
					v += (e - m) * (e - m) / float64(len(vals))
				}
				out := make([]float64, len(vals))
				for i, e := range vals {
					out[i] = (e - m) / math.Sqrt(v+eps)
				}
				return out
			}
			var inorm, gnorm []float64
			for p := range int(n) {
				for c := range 4 {
					for _, e := range norm(xs[(p*4+c)*6:(p*4+c+1)*6], float64(float32(1e-3))) {
						inorm = append(inorm, e*is[c]+ib[c])
					}
				}
				for g := range 2 {
					for i, e := range norm(xs[(p*2+g)*12:(p*2+g+1)*12], float64(float32(1e-5))) {
						k := g*2 + i/6 // the channel
						if opset == 18 {
							k = g
						}
						gnorm = append(gnorm, e*gs[k]+gb[k])
					}
				}
			}
			near(t, "instance norm", got[2], []int64{n, 4, 3, 2}, inorm, 1e-5)
			near(t, fmt.Sprintf("group norm (opset %d)", opset), got[3], []int64{n, 4, 3, 2}, gnorm, 1e-5)
		}
	}
}

// TestResize: Resize as PyTorch exports nn.Upsample and F.interpolate —
// nearest (asymmetric, floor; scales), bilinear without align_corners
// (pytorch_half_pixel; scales) and with it (align_corners; sizes, a
// non-integer ratio), and a half-pixel nearest downscale — on a dynamic
// batch, against PyTorch's own index arithmetic (upsample_nearest2d,
// upsample_bilinear2d) written out in float64; a cubic mode and a resized
// symbolic axis are errors at the node.
func TestResize(t *testing.T) {
	const h, w = 3, 4
	// src is PyTorch's area_pixel_compute_source_index for linear, the
	// floor rule for nearest: scale is 1/scale_factor, or (in−1)/(out−1)
	// with align_corners.
	linear := func(in, out int, scale float64, corners bool) (i0, i1 []int, l1 []float64) {
		for o := range out {
			r := scale * float64(o)
			if !corners {
				r = math.Max(scale*(float64(o)+0.5)-0.5, 0)
			}
			a := int(r)
			step := 0
			if a < in-1 {
				step = 1
			}
			i0, i1, l1 = append(i0, a), append(i1, a+step), append(l1, r-float64(a))
		}
		return
	}
	resize2 := func(xs []float64, n, oh, ow int, rows, cols func(o int) ([2]int, [2]float64)) []float64 {
		var out []float64
		for p := range n {
			for i := range oh {
				ri, rw := rows(i)
				for j := range ow {
					ci, cw := cols(j)
					var s float64
					for a := range 2 {
						for b := range 2 {
							s += rw[a] * cw[b] * xs[(p*h+ri[a])*w+ci[b]]
						}
					}
					out = append(out, s)
				}
			}
		}
		return out
	}
	nearestOf := func(in int, scale float64) func(o int) ([2]int, [2]float64) {
		return func(o int) ([2]int, [2]float64) {
			i := min(int(math.Floor(float64(o)*scale)), in-1)
			return [2]int{i, i}, [2]float64{1, 0}
		}
	}
	linearOf := func(in, out int, scale float64, corners bool) func(o int) ([2]int, [2]float64) {
		i0, i1, l1 := linear(in, out, scale, corners)
		return func(o int) ([2]int, [2]float64) { return [2]int{i0[o], i1[o]}, [2]float64{1 - l1[o], l1[o]} }
	}
	b := newBuilder(13)
	b.input("x", TypeFloat, "N", 1, h, w)
	b.floats("s23", []int64{4}, 1, 1, 2, 3)
	b.floats("s22", []int64{4}, 1, 1, 2, 2)
	b.floats("half", []int64{4}, 1, 1, 0.5, 0.5)
	b.node("Resize", []string{"x", "", "s23"}, []string{"nearest"}, aStr("mode", "nearest"),
		aStr("coordinate_transformation_mode", "asymmetric"), aStr("nearest_mode", "floor"))
	b.node("Resize", []string{"x", "", "s22"}, []string{"bilinear"}, aStr("mode", "linear"),
		aStr("coordinate_transformation_mode", "pytorch_half_pixel"))
	b.node("Resize", []string{"x", "", "half"}, []string{"down"}, aStr("mode", "nearest"))
	b.output("nearest", "bilinear", "down")
	mod := importFile(t, b.write(t))
	for _, n := range []int{1, 2} {
		x, xs := randTensor(t, rand.New(rand.NewPCG(uint64(n), 11)), int64(n), 1, h, w)
		got := call(t, mod, x)
		near(t, "nearest", got[0], []int64{int64(n), 1, 6, 12}, resize2(xs, n, 6, 12, nearestOf(h, 0.5), nearestOf(w, 1.0/3)), 1e-6)
		near(t, "bilinear", got[1], []int64{int64(n), 1, 6, 8}, resize2(xs, n, 6, 8, linearOf(h, 6, 0.5, false), linearOf(w, 8, 0.5, false)), 1e-6)
		// Half-pixel, round_prefer_floor: output o reads 2o+0.5 rounded down = 2o.
		near(t, "downscale", got[2], []int64{int64(n), 1, 1, 2}, resize2(xs, n, 1, 2, nearestOf(h, 2), nearestOf(w, 2)), 0)
	}
	// align_corners with sizes (5×7 from 3×4) whose batch entry is the
	// input's symbolic one (Shape → Slice → Concat, as F.interpolate(size=)
	// exports).
	b = newBuilder(13)
	b.input("x", TypeFloat, "N", 1, h, w)
	b.ints("start", 0)
	b.ints("end", 2)
	b.ints("hw", 5, 7)
	b.node("Shape", []string{"x"}, []string{"shape"})
	b.node("Slice", []string{"shape", "start", "end"}, []string{"nc"})
	b.node("Concat", []string{"nc", "hw"}, []string{"sizes"}, aInt("axis", 0))
	b.node("Resize", []string{"x", "", "", "sizes"}, []string{"y"}, aStr("mode", "linear"),
		aStr("coordinate_transformation_mode", "align_corners"))
	b.output("y")
	mod = importFile(t, b.write(t))
	for _, n := range []int{1, 3} {
		x, xs := randTensor(t, rand.New(rand.NewPCG(5, 11)), int64(n), 1, h, w)
		near(t, "align_corners", call(t, mod, x)[0], []int64{int64(n), 1, 5, 7},
			resize2(xs, n, 5, 7, linearOf(h, 5, float64(h-1)/4, true), linearOf(w, 7, float64(w-1)/6, true)), 1e-6)
	}
	for _, tc := range []struct {
		scales []float32
		mode   string
		want   string
	}{
		{[]float32{1, 1, 2, 2}, "cubic", `mode "cubic" is not supported`},
		{[]float32{2, 1, 1, 1}, "nearest", "resizing the symbolic axis 0 (s0) is not supported"},
		{[]float32{1, 1, 0, 1}, "nearest", "scale 0 of axis 2 is not positive"},
	} {
		b := newBuilder(13)
		b.input("x", TypeFloat, "N", 1, h, w)
		b.floats("scales", []int64{4}, tc.scales...)
		b.node("Resize", []string{"x", "", "scales"}, []string{"y"}, aStr("mode", tc.mode))
		b.output("y")
		_, err := Import(dialects.NewContext(), b.write(t), Options{})
		if err == nil || !strings.HasPrefix(err.Error(), `model.onnx: node 0 "Resize_y"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want an error naming the node and %q", tc.mode, tc.scales, err, tc.want)
		}
	}
}

// refConvTranspose is a transposed convolution by its definition: each
// input element scatters x·w into the output at i·s − pad + u·d.
func refConvTranspose(x []float64, n, cin, h, w int, wt []float64, coutG, kh, kw int, bias []float64,
	s, d [2]int, pads [4]int, oh, ow, groups int) []float64 {
	cout, cinG := coutG*groups, cin/groups
	out := make([]float64, n*cout*oh*ow)
	for b := range n {
		for oc := range cout {
			for i := range oh * ow {
				if bias != nil {
					out[(b*cout+oc)*oh*ow+i] = bias[oc]
				}
			}
		}
		for ic := range cin {
			g := ic / cinG
			for i := range h {
				for j := range w {
					v := x[((b*cin+ic)*h+i)*w+j]
					for o := range coutG {
						for u := range kh {
							for q := range kw {
								y, z := i*s[0]-pads[0]+u*d[0], j*s[1]-pads[1]+q*d[1]
								if y < 0 || y >= oh || z < 0 || z >= ow {
									continue
								}
								oc := g*coutG + o
								out[((b*cout+oc)*oh+y)*ow+z] += v * wt[((ic*coutG+o)*kh+u)*kw+q]
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestConvTranspose: ConvTranspose (nn.ConvTranspose2d/1d) with strides,
// pads, output_padding, dilation, groups and bias; pads wider than the
// dilated kernel (a crop); output_shape with SAME_UPPER and auto_pad
// SAME_LOWER; a 1-D one; on a dynamic batch, against the scatter
// definition.
func TestConvTranspose(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cin, coutG, g int
		h, w, kh, kw  int
		s, d          [2]int
		pads          [4]int // as the output's, after auto_pad / output_shape
		outPad        [2]int
		attrs         []*Attribute
		bias, oneD    bool
		oh, ow        int
	}{
		{name: "s2-p1-op1-g2-bias", cin: 4, coutG: 3, g: 2, h: 3, w: 4, kh: 3, kw: 3, s: [2]int{2, 2}, d: [2]int{1, 1},
			pads: [4]int{1, 1, 1, 1}, outPad: [2]int{1, 0}, bias: true, oh: 6, ow: 7,
			attrs: []*Attribute{aInts("strides", 2, 2), aInts("pads", 1, 1, 1, 1), aInts("output_padding", 1, 0), aInt("group", 2)}},
		{name: "s3x1-d2-crop", cin: 2, coutG: 2, g: 1, h: 4, w: 3, kh: 2, kw: 3, s: [2]int{3, 1}, d: [2]int{2, 2},
			pads: [4]int{3, 0, 2, 5}, oh: 7, ow: 2,
			attrs: []*Attribute{aInts("strides", 3, 1), aInts("dilations", 2, 2), aInts("pads", 3, 0, 2, 5)}},
		{name: "output_shape-same_upper", cin: 2, coutG: 1, g: 1, h: 3, w: 3, kh: 3, kw: 2, s: [2]int{2, 2}, d: [2]int{1, 1},
			pads: [4]int{0, 0, 1, 1}, oh: 6, ow: 5, bias: true, // full 7×6, total 1 each: 0 before, 1 after
			attrs: []*Attribute{aInts("strides", 2, 2), aInts("output_shape", 6, 5), aStr("auto_pad", "SAME_UPPER")}},
		{name: "same_lower", cin: 3, coutG: 2, g: 1, h: 2, w: 3, kh: 4, kw: 4, s: [2]int{2, 2}, d: [2]int{1, 1},
			pads: [4]int{1, 1, 1, 1}, oh: 4, ow: 6, // full 6×8 → in·s: total 2 each
			attrs: []*Attribute{aInts("strides", 2, 2), aStr("auto_pad", "SAME_LOWER")}},
		{name: "1d-s2-p1-op1", cin: 2, coutG: 3, g: 1, h: 1, w: 5, kh: 1, kw: 3, s: [2]int{1, 2}, d: [2]int{1, 1},
			pads: [4]int{0, 1, 0, 1}, outPad: [2]int{0, 1}, oneD: true, bias: true, oh: 1, ow: 10,
			attrs: []*Attribute{aInts("strides", 2), aInts("pads", 1, 1), aInts("output_padding", 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(17)
			if tc.oneD {
				b.input("x", TypeFloat, "N", tc.cin, tc.w)
			} else {
				b.input("x", TypeFloat, "N", tc.cin, tc.h, tc.w)
			}
			wdims := []int64{int64(tc.cin), int64(tc.coutG), int64(tc.kh), int64(tc.kw)}
			if tc.oneD {
				wdims = []int64{int64(tc.cin), int64(tc.coutG), int64(tc.kw)}
			}
			wt := b.weight("w", wdims...)
			ins := []string{"x", "w"}
			var bias []float64
			if tc.bias {
				bias = b.weight("b", int64(tc.coutG*tc.g))
				ins = append(ins, "b")
			}
			b.node("ConvTranspose", ins, []string{"y"}, tc.attrs...)
			b.output("y")
			mod := importFile(t, b.write(t))
			for _, n := range []int64{1, 2} {
				shape := []int64{n, int64(tc.cin), int64(tc.h), int64(tc.w)}
				if tc.oneD {
					shape = []int64{n, int64(tc.cin), int64(tc.w)}
				}
				x, xs := randTensor(t, rand.New(rand.NewPCG(uint64(n), 13)), shape...)
				want := refConvTranspose(xs, int(n), tc.cin, tc.h, tc.w, wt, tc.coutG, tc.kh, tc.kw, bias, tc.s, tc.d, tc.pads, tc.oh, tc.ow, tc.g)
				wshape := []int64{n, int64(tc.coutG * tc.g), int64(tc.oh), int64(tc.ow)}
				if tc.oneD {
					wshape = []int64{n, int64(tc.coutG * tc.g), int64(tc.ow)}
				}
				near(t, tc.name, call(t, mod, x)[0], wshape, want, 1e-5)
			}
		})
	}
	for _, tc := range []struct {
		attrs []*Attribute
		want  string
	}{
		{[]*Attribute{aInts("strides", 2, 2), aInts("output_padding", 2, 0)}, "want each ≥ 1 and output_padding below the stride or the dilation"},
		{[]*Attribute{aInts("pads", 3, 3, 3, 3)}, "pads [3 3 3 3] leave no output of axis 2"},
		{[]*Attribute{aInt("group", 3)}, "want the weight's first dim equal to the channels and divisible by group"},
	} {
		b := newBuilder(17)
		b.input("x", TypeFloat, "N", 2, 3, 3)
		b.weight("w", 2, 1, 3, 3)
		b.node("ConvTranspose", []string{"x", "w"}, []string{"y"}, tc.attrs...)
		b.output("y")
		_, err := Import(dialects.NewContext(), b.write(t), Options{})
		if err == nil || !strings.HasPrefix(err.Error(), `model.onnx: node 0 "ConvTranspose_y"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming the node and %q", tc.attrs, err, tc.want)
		}
	}
}

// TestDepthToSpace: DepthToSpace in DCR and CRD mode and SpaceToDepth, on
// a dynamic batch, against the index formulas of their definitions
// (PixelShuffle is CRD: out[c][h·b+i][w·b+j] = in[c·b²+i·b+j][h][w]).
func TestDepthToSpace(t *testing.T) {
	const c, h, w, bs = 8, 2, 3, 2
	b := newBuilder(13)
	b.input("x", TypeFloat, "N", c, h, w)
	b.node("DepthToSpace", []string{"x"}, []string{"dcr"}, aInt("blocksize", bs))
	b.node("DepthToSpace", []string{"x"}, []string{"crd"}, aInt("blocksize", bs), aStr("mode", "CRD"))
	b.node("SpaceToDepth", []string{"crd"}, []string{"back"}, aInt("blocksize", bs))
	b.output("dcr", "crd", "back")
	mod := importFile(t, b.write(t))
	const oc = c / (bs * bs)
	for _, n := range []int64{1, 2} {
		x, xs := randTensor(t, rand.New(rand.NewPCG(uint64(n), 17)), n, c, h, w)
		at := func(p, ch, i, j int) float64 { return xs[((p*c+ch)*h+i)*w+j] }
		var dcr, crd []float64
		for p := range int(n) {
			for o := range oc {
				for y := range h * bs {
					for z := range w * bs {
						dcr = append(dcr, at(p, ((y%bs)*bs+z%bs)*oc+o, y/bs, z/bs))
						crd = append(crd, at(p, o*bs*bs+(y%bs)*bs+z%bs, y/bs, z/bs))
					}
				}
			}
		}
		got := call(t, mod, x)
		near(t, "DCR", got[0], []int64{n, oc, h * bs, w * bs}, dcr, 0)
		near(t, "CRD", got[1], []int64{n, oc, h * bs, w * bs}, crd, 0)
		// SpaceToDepth: out[c·b²… in DCR order] — of CRD's output it
		// gives DCR's channel order back: out[(i·b+j)·C'+o] = crd[o][h·b+i][w·b+j].
		var back []float64
		for p := range int(n) {
			for i := range bs {
				for j := range bs {
					for o := range oc {
						for y := range h {
							for z := range w {
								back = append(back, at(p, o*bs*bs+i*bs+j, y, z))
							}
						}
					}
				}
			}
		}
		near(t, "SpaceToDepth", got[2], []int64{n, c, h, w}, back, 0)
	}
}

// TestLRN: LRN (nn.LocalResponseNorm, AlexNet's and GoogLeNet's) with an
// even and an odd size on a dynamic batch, against its definition: the
// sum of squares over channels c − ⌊(size−1)/2⌋ … c + ⌈(size−1)/2⌉.
func TestLRN(t *testing.T) {
	const ch, h, w = 5, 2, 3
	for _, size := range []int{2, 3} {
		b := newBuilder(13)
		b.input("x", TypeFloat, "N", ch, h, w)
		b.node("LRN", []string{"x"}, []string{"y"}, aInt("size", int64(size)), aFloat("alpha", 0.3), aFloat("beta", 0.6), aFloat("bias", 1.5))
		b.output("y")
		mod := importFile(t, b.write(t))
		for _, n := range []int64{1, 2} {
			x, xs := randTensor(t, rand.New(rand.NewPCG(uint64(n), uint64(size))), n, ch, h, w)
			want := make([]float64, len(xs))
			for p := range int(n) {
				for c := range ch {
					for i := range h * w {
						var sum float64
						for k := c - (size-1)/2; k <= c+size/2; k++ {
							if k >= 0 && k < ch {
								v := xs[(p*ch+k)*h*w+i]
								sum += v * v
							}
						}
						at := (p*ch+c)*h*w + i
						want[at] = xs[at] / math.Pow(1.5+float64(float32(0.3))/float64(size)*sum, float64(float32(0.6)))
					}
				}
			}
			near(t, fmt.Sprintf("LRN size %d", size), call(t, mod, x)[0], []int64{n, ch, h, w}, want, 1e-5)
		}
	}
}

// TestRounding: Floor, Ceil and Round (half to even) of a computed tensor
// — ties, negatives, values past 2^23 and infinities — and of a constant
// (folded), against math's.
func TestRounding(t *testing.T) {
	vs := []float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -2.7, -0.2, 0, 0.2, 3.7, 1e9 + 0.5, 1e9, -9e9, 8388609, math.Inf(1), math.Inf(-1), 1e30, 2.4999998, -3.0000002}
	b := newBuilder(13)
	b.input("x", TypeFloat, len(vs))
	b.floats("k", []int64{2}, -1.5, 2.5)
	for _, op := range []string{"Floor", "Ceil", "Round"} {
		b.node(op, []string{"x"}, []string{op})
		b.node(op, []string{"k"}, []string{op + "k"})
		b.node("Add", []string{op, op}, []string{op + "2"}) // computed, not an output alias
	}
	b.output("Floor2", "Ceil2", "Round2", "Floork", "Ceilk", "Roundk")
	mod := importFile(t, b.write(t))
	x, err := interp.FromFloat64s(ir.F32, []int64{int64(len(vs))}, vs)
	if err != nil {
		t.Fatal(err)
	}
	xs := x.Float64s()
	got := call(t, mod, x)
	for i, f := range []func(float64) float64{math.Floor, math.Ceil, math.RoundToEven} {
		want := make([]float64, len(xs))
		for j, v := range xs {
			want[j] = 2 * f(v)
		}
		near(t, []string{"floor", "ceil", "round"}[i], got[i], []int64{int64(len(vs))}, want, 0)
		near(t, []string{"floor", "ceil", "round"}[i]+" (constant)", got[3+i], []int64{2}, []float64{f(-1.5), f(2.5)}, 0)
	}
}

// refEinsum evaluates an explicit equation (letters only) over float64
// operands by summing every assignment of the labels.
func refEinsum(eq string, shapes [][]int64, ops [][]float64) ([]int64, []float64) {
	lhs, rhs, _ := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	size := map[byte]int64{}
	var labels []byte
	for i, tm := range terms {
		for j := range len(tm) {
			if _, ok := size[tm[j]]; !ok {
				labels = append(labels, tm[j])
			}
			size[tm[j]] = shapes[i][j]
		}
	}
	var outShape []int64
	for j := range len(rhs) {
		outShape = append(outShape, size[rhs[j]])
	}
	n := int64(1)
	for _, d := range outShape {
		n *= d
	}
	out := make([]float64, n)
	at := map[byte]int64{}
	index := func(tm string, shape []int64) int64 {
		var k int64
		for j := range len(tm) {
			k = k*shape[j] + at[tm[j]]
		}
		return k
	}
	var walk func(i int)
	walk = func(i int) {
		if i == len(labels) {
			p := 1.0
			for t, tm := range terms {
				p *= ops[t][index(tm, shapes[t])]
			}
			out[index(rhs, outShape)] += p
			return
		}
		for v := range size[labels[i]] {
			at[labels[i]] = v
			walk(i + 1)
		}
	}
	walk(0)
	return outShape, out
}

// TestEinsum: Einsum as attention and CNN attention modules write it —
// batched products, transposed contractions, implicit outputs, an
// ellipsis, a single operand's transpose and sums, a dot product, a label
// only one operand has (summed first) — on a symbolic batch where there is
// one, against the sum over every label assignment; repeated labels and a
// bad equation are errors at the node.
func TestEinsum(t *testing.T) {
	for _, tc := range []struct {
		eq, explicit string // explicit: the equation refEinsum evaluates
		shapes       [][]int64
		dynamic      []bool // operands whose first axis is the symbolic N
	}{
		{"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", [][]int64{{2, 3, 4, 5}, {2, 3, 6, 5}}, []bool{true, true}},
		{"bij,bjk->bik", "bij,bjk->bik", [][]int64{{3, 2, 4}, {3, 4, 5}}, []bool{true, true}},
		{"ij,jk", "ij,jk->ik", [][]int64{{3, 4}, {4, 2}}, nil},
		{"ij,kj->ik", "ij,kj->ik", [][]int64{{3, 4}, {2, 4}}, nil},
		{"...ij,...jk->...ik", "abij,abjk->abik", [][]int64{{2, 3, 2, 4}, {2, 3, 4, 5}}, []bool{true, true}},
		{"bchw->bhwc", "bchw->bhwc", [][]int64{{2, 3, 4, 5}}, []bool{true}},
		{"bchw->bc", "bchw->bc", [][]int64{{2, 3, 4, 5}}, []bool{true}},
		{"i,i->", "i,i->", [][]int64{{7}, {7}}, nil},
		{"abc,cd->ad", "abc,cd->ad", [][]int64{{2, 3, 4}, {4, 5}}, []bool{true}},
		{"bnd,md -> bnm", "bnd,md->bnm", [][]int64{{2, 6, 4}, {5, 4}}, []bool{true}},
	} {
		t.Run(tc.eq, func(t *testing.T) {
			b := newBuilder(13)
			var ins []string
			for i, s := range tc.shapes {
				dims := make([]any, len(s))
				for j, d := range s {
					dims[j] = int(d)
				}
				if i < len(tc.dynamic) && tc.dynamic[i] {
					dims[0] = "N"
				}
				name := fmt.Sprintf("x%d", i)
				b.input(name, TypeFloat, dims...)
				ins = append(ins, name)
			}
			b.node("Einsum", ins, []string{"y"}, aStr("equation", tc.eq))
			b.output("y")
			mod := importFile(t, b.write(t))
			rng := rand.New(rand.NewPCG(7, uint64(len(tc.eq))))
			var args []*interp.Tensor
			var vals [][]float64
			for _, s := range tc.shapes {
				x, xs := randTensor(t, rng, s...)
				args, vals = append(args, x), append(vals, xs)
			}
			shape, want := refEinsum(tc.explicit, tc.shapes, vals)
			near(t, tc.eq, call(t, mod, args...)[0], shape, want, 1e-5)
		})
	}
	for _, tc := range []struct{ eq, want string }{
		{"ii->i", `repeats label 'i' (a diagonal)`},
		{"ij,jk->iq", `output label 'q' is not an operand's`},
		{"ij->", ``}, // valid: a full sum (checked below to import)
		{"i1,jk->ik", `"i1": '1' is not a letter`},
		{"ij,jk->.k", `the output's subscripts ".k" have a malformed ellipsis`},
		{"ij,jk->i..k", `the output's subscripts "i..k" have a malformed ellipsis`},
		{"i.j,jk->ik", `operand 0's subscripts "i.j" have a malformed ellipsis`},
		{"...ij,jk->....ik", `the output's subscripts "....ik" have a malformed ellipsis`},
	} {
		b := newBuilder(13)
		b.input("x", TypeFloat, 3, 3)
		ins := []string{"x"}
		if strings.Contains(tc.eq, ",") {
			b.input("z", TypeFloat, 3, 3)
			ins = append(ins, "z")
		}
		b.node("Einsum", ins, []string{"y"}, aStr("equation", tc.eq))
		b.output("y")
		_, err := Import(dialects.NewContext(), b.write(t), Options{})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.eq, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), `model.onnx: node 0 "Einsum_y"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming the node and %q", tc.eq, err, tc.want)
		}
	}
}
