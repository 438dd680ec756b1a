package nn_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/importers/onnx"
	"github.com/strata-ir/strata/nn"
)

// onnxCNN builds an exported-style CNN: inputs [N, C, H, W], a first
// node list whose attributes (asymmetric pads, auto_pad, non-square
// kernels and strides, ceil_mode, count_include_pad) torch.onnx.export
// and other exporters write and nn's layers never make.
type onnxCNN struct {
	name    string
	c, h, w int
	// opset is the model's (0: 13).
	opset int64
	// nodes adds the model's nodes after the input "x" and returns the
	// output names.
	nodes func(b *onnxBuilder) []string
}

// onnxBuilder assembles an ONNX graph; with half, its float initializers
// are float16 (a model exported after .half()).
type onnxBuilder struct {
	g    onnx.Graph
	rng  *rand.Rand
	half bool
}

// floats adds the float initializer name of the given dims and values.
func (b *onnxBuilder) floats(name string, dims []int64, vs []float32) string {
	var raw []byte
	dt := int32(onnx.TypeFloat)
	for _, v := range vs {
		if b.half {
			raw = binary.LittleEndian.AppendUint16(raw, f16Bits(v))
		} else {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	}
	if b.half {
		dt = onnx.TypeFloat16
	}
	b.g.Initializers = append(b.g.Initializers, &onnx.Tensor{Name: name, Dims: dims, DataType: dt, RawData: raw, HasRaw: true})
	return name
}

// f16Bits rounds v to float16 (to nearest even; subnormals flush to
// zero: the test's values are far from them or exactly zero).
func f16Bits(v float32) uint16 {
	bits := math.Float32bits(v)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23&0xff) - 127 + 15
	mant := bits & 0x7fffff
	switch {
	case exp >= 31:
		return sign | 0x7c00 // ±inf
	case exp <= 0:
		return sign
	}
	h := uint16(exp)<<10 | uint16(mant>>13)
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent is the right rounding too
	}
	return sign | h
}

func (b *onnxBuilder) weight(name string, dims ...int64) string {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	vs := make([]float32, n)
	for i := range vs {
		vs[i] = float32(b.rng.Float64()*2 - 1)
	}
	return b.floats(name, dims, vs)
}

// scalar adds a float scalar initializer of value v.
func (b *onnxBuilder) scalar(name string, v float32) string {
	return b.floats(name, nil, []float32{v})
}

func (b *onnxBuilder) node(op string, ins []string, out string, attrs ...*onnx.Attribute) string {
	b.g.Nodes = append(b.g.Nodes, &onnx.Node{OpType: op, Name: op + "_" + out, Inputs: ins, Outputs: []string{out}, Attrs: attrs})
	return out
}

func ints(name string, vs ...int64) *onnx.Attribute {
	return &onnx.Attribute{Name: name, Type: onnx.AttrInts, Ints: vs}
}
func oint(name string, v int64) *onnx.Attribute {
	return &onnx.Attribute{Name: name, Type: onnx.AttrInt, I: v}
}
func ostr(name, v string) *onnx.Attribute {
	return &onnx.Attribute{Name: name, Type: onnx.AttrString, S: []byte(v)}
}

var onnxCNNs = []onnxCNN{
	{"same_upper_stride2_even", 3, 16, 16, 0, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 5, 3, 3, 3), b.weight("b", 5)}, "c",
			ints("kernel_shape", 3, 3), ints("strides", 2, 2), ostr("auto_pad", "SAME_UPPER"))
		return []string{b.node("Relu", []string{c}, "r")}
	}},
	{"same_lower_k4_stride2_odd", 3, 17, 15, 0, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 4, 3, 4, 4)}, "c",
			ints("kernel_shape", 4, 4), ints("strides", 2, 2), ostr("auto_pad", "SAME_LOWER"))
		return []string{c}
	}},
	{"asymmetric_pads_nonsquare", 5, 15, 17, 0, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 7, 5, 3, 5), b.weight("b", 7)}, "c",
			ints("kernel_shape", 3, 5), ints("strides", 1, 3), ints("pads", 1, 0, 2, 3), ints("dilations", 2, 1))
		return []string{c}
	}},
	{"depthwise_asymmetric", 6, 15, 15, 0, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 6, 1, 3, 3), b.weight("b", 6)}, "c",
			ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 0, 0, 1, 1), oint("group", 6))
		return []string{b.node("Relu", []string{c}, "r")}
	}},
	{"maxpool_ceil", 3, 15, 16, 0, func(b *onnxBuilder) []string {
		return []string{b.node("MaxPool", []string{"x"}, "p", ints("kernel_shape", 3, 3), ints("strides", 2, 2), oint("ceil_mode", 1))}
	}},
	{"avgpool_ceil_excl_pad", 3, 17, 15, 0, func(b *onnxBuilder) []string {
		return []string{b.node("AveragePool", []string{"x"}, "p", ints("kernel_shape", 3, 2), ints("strides", 2, 3),
			ints("pads", 1, 0, 1, 1), oint("ceil_mode", 1), oint("count_include_pad", 0))}
	}},
	// MobileNetV3's inverted residual with squeeze-and-excitation, as
	// exported: 1×1 expand, ReLU6 (Clip with min and max inputs),
	// depthwise 5×5 stride 1, the SE gate (GlobalAveragePool, 1×1 convs,
	// Relu, HardSigmoid, a broadcast Mul), HardSwish, 1×1 project and the
	// residual Add.
	{"mobilenet_se_block", 6, 13, 11, 0, func(b *onnxBuilder) []string {
		lo, hi := b.scalar("zero", 0), b.scalar("six", 6)
		e := b.node("Conv", []string{"x", b.weight("we", 12, 6, 1, 1), b.weight("be", 12)}, "e", ints("kernel_shape", 1, 1))
		e = b.node("Clip", []string{e, lo, hi}, "e6")
		d := b.node("Conv", []string{e, b.weight("wd", 12, 1, 5, 5), b.weight("bd", 12)}, "d",
			ints("kernel_shape", 5, 5), ints("pads", 2, 2, 2, 2), oint("group", 12))
		g := b.node("GlobalAveragePool", []string{d}, "g")
		g = b.node("Conv", []string{g, b.weight("ws1", 4, 12, 1, 1), b.weight("bs1", 4)}, "s1", ints("kernel_shape", 1, 1))
		g = b.node("Relu", []string{g}, "s1r")
		g = b.node("Conv", []string{g, b.weight("ws2", 12, 4, 1, 1), b.weight("bs2", 12)}, "s2", ints("kernel_shape", 1, 1))
		g = b.node("HardSigmoid", []string{g}, "gate", &onnx.Attribute{Name: "alpha", Type: onnx.AttrFloat, F: 1.0 / 6})
		d = b.node("Mul", []string{d, g}, "se")
		d = b.node("HardSwish", []string{d}, "hs")
		p := b.node("Conv", []string{d, b.weight("wp", 6, 12, 1, 1)}, "p", ints("kernel_shape", 1, 1))
		return []string{b.node("Add", []string{p, "x"}, "y")}
	}},
	// A grouped (not depthwise) convolution, dilated and strided
	// unequally with asymmetric pads and a bias, then batch norm in
	// evaluation mode (the compiler may fold it into the convolution).
	{"grouped_dilated_strided_bn", 8, 17, 19, 0, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 6, 4, 3, 3), b.weight("b", 6)}, "c",
			ints("kernel_shape", 3, 3), ints("strides", 2, 3), ints("dilations", 2, 1), ints("pads", 1, 2, 0, 1), oint("group", 2))
		n := b.node("BatchNormalization", []string{c, b.positive("s", 0.5, 1.5, 6), b.weight("sh", 6), b.weight("m", 6), b.positive("v", 0.5, 2, 6)}, "n",
			&onnx.Attribute{Name: "epsilon", Type: onnx.AttrFloat, F: 1e-3})
		return []string{b.node("Relu", []string{n}, "r")}
	}},
	// Batch norm after a convolution whose output is also read by the
	// residual Add: folding the batch norm into the convolution must
	// leave the Add's operand unscaled.
	{"bn_fold_shared_conv", 4, 11, 13, 0, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 4, 4, 3, 3)}, "c", ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1))
		n := b.node("BatchNormalization", []string{c, b.positive("s", 0.5, 1.5, 4), b.weight("sh", 4), b.weight("m", 4), b.positive("v", 0.5, 2, 4)}, "n")
		return []string{b.node("Add", []string{b.node("Relu", []string{n}, "r"), c}, "y")}
	}},
	// PyTorch's AvgPool2d(3, 2, 1, ceil_mode=True) (count_include_pad
	// true): the divisor counts the padding but not the ceil-mode
	// overhang.
	{"avgpool_ceil_incl_pad", 3, 15, 16, 0, func(b *onnxBuilder) []string {
		return []string{b.node("AveragePool", []string{"x"}, "p", ints("kernel_shape", 3, 3), ints("strides", 2, 2),
			ints("pads", 1, 1, 1, 1), oint("ceil_mode", 1), oint("count_include_pad", 1))}
	}},
	// Gelu (opset 20) in both forms on a 1×1 convolution's output, and
	// LayerNormalization over the last axis without a bias input at
	// epsilon 1e-3.
	{"gelu_tanh_erf_layernorm", 5, 9, 12, 20, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 6, 5, 1, 1), b.weight("b", 6)}, "c", ints("kernel_shape", 1, 1))
		t := b.node("Gelu", []string{c}, "gt", ostr("approximate", "tanh"))
		e := b.node("Gelu", []string{c}, "ge")
		l := b.node("LayerNormalization", []string{b.node("Add", []string{t, e}, "a"), b.positive("g", 0.5, 1.5, 12)}, "l",
			oint("axis", -1), &onnx.Attribute{Name: "epsilon", Type: onnx.AttrFloat, F: 1e-3})
		return []string{l}
	}},
	// Conv2d's padding_mode reflect and replicate (Pad reflect, edge) and
	// nearest ×2 upsampling as the classic exporter writes nn.Upsample.
	{"pad_modes_upsample", 3, 9, 11, 0, func(b *onnxBuilder) []string {
		p := b.node("Pad", []string{"x", b.int64s("p1", 0, 0, 1, 2, 0, 0, 1, 1)}, "p", ostr("mode", "reflect"))
		c := b.node("Conv", []string{p, b.weight("w", 4, 3, 3, 3), b.weight("b", 4)}, "c", ints("kernel_shape", 3, 3))
		e := b.node("Pad", []string{c, b.int64s("p2", 0, 0, 2, 0, 0, 0, 0, 3)}, "e", ostr("mode", "edge"))
		u := b.node("Resize", []string{e, "", b.scales("sc", 1, 1, 2, 2)}, "u", ostr("mode", "nearest"),
			ostr("coordinate_transformation_mode", "asymmetric"), ostr("nearest_mode", "floor"))
		return []string{u}
	}},
	// Activations and normalizations of CNNs outside torchvision's list
	// (opset 18): PRelu per channel, Elu, Selu, Celu, Mish, Softsign,
	// ThresholdedRelu, InstanceNormalization, GroupNormalization (opset
	// 18's per-group scale and bias).
	{"activations_norms", 4, 7, 9, 18, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 6, 4, 3, 3), b.weight("b", 6)}, "c", ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1))
		p := b.node("PRelu", []string{c, b.weight("slope", 6, 1, 1)}, "p")
		i := b.node("InstanceNormalization", []string{p, b.positive("is", 0.5, 1.5, 6), b.weight("ib", 6)}, "i")
		e := b.node("Elu", []string{i}, "e", &onnx.Attribute{Name: "alpha", Type: onnx.AttrFloat, F: 0.8})
		g := b.node("GroupNormalization", []string{e, b.positive("gs", 0.5, 1.5, 3), b.weight("gb", 3)}, "g", oint("num_groups", 3))
		m := b.node("Mish", []string{g}, "m")
		sl := b.node("Selu", []string{b.node("Add", []string{m, b.node("Celu", []string{g}, "ce")}, "a")}, "sl")
		ss := b.node("Softsign", []string{sl}, "ss")
		return []string{b.node("ThresholdedRelu", []string{ss}, "y", &onnx.Attribute{Name: "alpha", Type: onnx.AttrFloat, F: 0.1})}
	}},
	// A decoder: grouped ConvTranspose (stride 2, pads, output_padding,
	// bias), PixelShuffle (DepthToSpace CRD), bilinear ×2 upsampling
	// (Resize linear, pytorch_half_pixel), SpaceToDepth.
	{"convtranspose_shuffle_bilinear", 4, 5, 6, 0, func(b *onnxBuilder) []string {
		ct := b.node("ConvTranspose", []string{"x", b.weight("w", 4, 4, 3, 3), b.weight("b", 8)}, "ct",
			ints("strides", 2, 2), ints("pads", 1, 1, 1, 1), ints("output_padding", 1, 1), oint("group", 2))
		d := b.node("DepthToSpace", []string{b.node("Relu", []string{ct}, "r")}, "d", oint("blocksize", 2), ostr("mode", "CRD"))
		u := b.node("Resize", []string{d, "", b.scales("sc", 1, 1, 2, 2)}, "u", ostr("mode", "linear"),
			ostr("coordinate_transformation_mode", "pytorch_half_pixel"))
		return []string{b.node("SpaceToDepth", []string{u}, "y", oint("blocksize", 4))}
	}},
	// Einsum as CNN attention modules write it: a 1×1 convolution
	// ("nchw,oc->nohw"), a channels-last transpose and a per-position
	// product with a contraction ("nhwo,nhwo->nhw").
	{"einsum", 4, 5, 6, 0, func(b *onnxBuilder) []string {
		eq := func(e string) *onnx.Attribute { return ostr("equation", e) }
		p := b.node("Einsum", []string{"x", b.weight("w", 3, 4)}, "p", eq("nchw,oc->nohw"))
		l := b.node("Einsum", []string{p}, "l", eq("nohw->nhwo"))
		return []string{b.node("Einsum", []string{l, l}, "y", eq("nhwo,nhwo->nhw")), p}
	}},
	{"stem_to_head", 3, 31, 31, 0, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w1", 7, 3, 7, 7), b.weight("b1", 7)}, "c1",
			ints("kernel_shape", 7, 7), ints("strides", 2, 2), ints("pads", 3, 3, 3, 3))
		r := b.node("Relu", []string{c}, "r1")
		p := b.node("MaxPool", []string{r}, "p1", ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))
		c2 := b.node("Conv", []string{p, b.weight("w2", 5, 7, 1, 1)}, "c2", ints("kernel_shape", 1, 1))
		g := b.node("GlobalAveragePool", []string{c2}, "g")
		f := b.node("Flatten", []string{g}, "f")
		return []string{b.node("Gemm", []string{f, b.weight("fc", 3, 5), b.weight("fcb", 3)}, "y", oint("transB", 1))}
	}},
}

// TestShapesONNXCNNs loads exported-style CNNs (frontend.Load) of odd
// sizes and the attributes exporters write (auto_pad SAME_UPPER and
// SAME_LOWER, asymmetric pads, non-square kernels and strides,
// ceil_mode, count_include_pad = 0) on every model path, against the
// eager interpreter of the imported graph (whose rules the importer's
// own tests check against float64 loops).
func TestShapesONNXCNNs(t *testing.T) {
	for i, m := range onnxCNNs {
		for _, n := range []int{1, 3} {
			// A model exported in float16 (after .half()), at batch 3.
			half := n == 3
			dt, elem := frontend.Float32, int32(onnx.TypeFloat)
			if half {
				dt, elem = frontend.Float16, onnx.TypeFloat16
			}
			t.Run(fmt.Sprintf("%s/n%d/%v", m.name, n, dt), func(t *testing.T) {
				b := &onnxBuilder{rng: rand.New(rand.NewPCG(uint64(i), 1)), half: half}
				b.g.Name = m.name
				b.g.Inputs = []*onnx.ValueInfo{{Name: "x", ElemType: elem, HasShape: true, Dims: []onnx.Dim{
					{Value: int64(n), HasValue: true}, {Value: int64(m.c), HasValue: true}, {Value: int64(m.h), HasValue: true}, {Value: int64(m.w), HasValue: true}}}}
				for _, o := range m.nodes(b) {
					b.g.Outputs = append(b.g.Outputs, &onnx.ValueInfo{Name: o, ElemType: elem})
				}
				opset := m.opset
				if opset == 0 {
					opset = 13
				}
				model := &onnx.Model{IRVersion: 8, ProducerName: "strata-test", Opsets: []onnx.OpsetID{{Version: opset}}, Graph: &b.g}
				path := filepath.Join(t.TempDir(), "model.onnx")
				if err := os.WriteFile(path, model.Marshal(), 0o644); err != nil {
					t.Fatal(err)
				}
				x := nn.NewRNG(uint64(i)).Uniform(-1, 1, n, m.c, m.h, m.w).Cast(dt)
				ref, err := frontend.Load(path, frontend.Options{Backend: frontend.EagerBackend})
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Call(x)
				if err != nil {
					t.Fatal(err)
				}
				forPaths(t, x.Shape()[0]*m.c*m.h*m.w*30, dt, func(t *testing.T, opts frontend.Options) {
					l, err := frontend.Load(path, opts)
					if err != nil {
						t.Fatal(err)
					}
					got, err := l.Call(x)
					called(t, m.name, err)
					for k := range want {
						if got[k].DType() != dt {
							t.Errorf("output %d is %v, want %v", k, got[k].DType(), dt)
						}
						closeTo(t, fmt.Sprintf("output %d", k), got[k], want[k].Shape(), want[k].Float64s(), tolOf(dt))
					}
				})
			})
		}
	}
}

// floatsOf returns the float32 initializer name of b as float64s.
func (b *onnxBuilder) floatsOf(name string) []float64 {
	for _, t := range b.g.Initializers {
		if t.Name == name {
			out := make([]float64, len(t.RawData)/4)
			for i := range out {
				out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.RawData[4*i:])))
			}
			return out
		}
	}
	panic("no initializer " + name)
}

// positive adds an initializer of values in [lo, hi) (batch norm's
// variances and scales).
func (b *onnxBuilder) positive(name string, lo, hi float64, n int64) string {
	vs := make([]float32, n)
	for i := range vs {
		vs[i] = float32(lo + (hi-lo)*b.rng.Float64())
	}
	return b.floats(name, []int64{n}, vs)
}

// TestShapesONNXResNetBlock loads a ResNet stem and basic block as
// torch.onnx.export writes them without folding (Conv, BatchNormalization
// with running statistics, Relu, MaxPool with padding, a residual Add,
// GlobalAveragePool, Flatten, Gemm) with a symbolic batch dim, calls it at
// batches 1, 3 and 2 on every model path, and compares with the same
// network built from nn's layers with the file's weights in float64 (so
// the importer's meaning is checked too, not only its lowering).
func TestShapesONNXResNetBlock(t *testing.T) {
	const c, h, w, width, classes = 3, 19, 21, 8, 5
	b := &onnxBuilder{rng: rand.New(rand.NewPCG(77, 1))}
	b.g.Name = "resnet_block"
	b.g.Inputs = []*onnx.ValueInfo{{Name: "x", ElemType: onnx.TypeFloat, HasShape: true, Dims: []onnx.Dim{
		{Param: "N"}, {Value: c, HasValue: true}, {Value: h, HasValue: true}, {Value: w, HasValue: true}}}}
	bn := func(in, p string) string {
		return b.node("BatchNormalization", []string{in, b.positive(p+"_s", 0.5, 1.5, width), b.weight(p+"_b", width),
			b.weight(p+"_m", width), b.positive(p+"_v", 0.5, 2, width)}, p+"_y", &onnx.Attribute{Name: "epsilon", Type: onnx.AttrFloat, F: 1e-5})
	}
	x := b.node("Conv", []string{"x", b.weight("w1", width, c, 3, 3), b.weight("b1", width)}, "c1",
		ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))
	x = b.node("Relu", []string{bn(x, "bn1")}, "r1")
	x = b.node("MaxPool", []string{x}, "p1", ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))
	y := b.node("Conv", []string{x, b.weight("w2", width, width, 3, 3)}, "c2", ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1))
	y = b.node("Relu", []string{bn(y, "bn2")}, "r2")
	y = b.node("Conv", []string{y, b.weight("w3", width, width, 3, 3)}, "c3", ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1))
	y = b.node("Add", []string{bn(y, "bn3"), x}, "sum")
	y = b.node("Relu", []string{y}, "r3")
	y = b.node("GlobalAveragePool", []string{y}, "g")
	y = b.node("Flatten", []string{y}, "f")
	y = b.node("Gemm", []string{y, b.weight("fc", classes, width), b.weight("fcb", classes)}, "logits", oint("transB", 1))
	b.g.Outputs = []*onnx.ValueInfo{{Name: y, ElemType: onnx.TypeFloat}}
	model := &onnx.Model{IRVersion: 8, ProducerName: "strata-test", Opsets: []onnx.OpsetID{{Version: 17}}, Graph: &b.g}
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, model.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}

	// The same network from nn's layers, in float64.
	f64 := func(name string, shape ...int) *frontend.Tensor {
		return frontend.FromSlice(b.floatsOf(name), shape...)
	}
	conv := func(wn, bn string, cin, stride int) *nn.Conv2d {
		cv := &nn.Conv2d{Weight: f64(wn, width, cin, 3, 3), Stride: stride, Padding: 1, Dilation: 1, Groups: 1}
		if bn != "" {
			cv.Bias = f64(bn, width)
		}
		return cv
	}
	norm := func(p string) *nn.BatchNorm2d {
		return &nn.BatchNorm2d{Weight: f64(p+"_s", width), Bias: f64(p+"_b", width), RunningMean: f64(p+"_m", width),
			RunningVar: f64(p+"_v", width), Eps: 1e-5, Momentum: 0.1}
	}
	c1, c2, c3 := conv("w1", "b1", c, 2), conv("w2", "", width, 1), conv("w3", "", width, 1)
	bn1, bn2, bn3 := norm("bn1"), norm("bn2"), norm("bn3")
	fc := &nn.Linear{Weight: f64("fc", classes, width).Transpose(1, 0), Bias: f64("fcb", classes)}
	ref := func(x *frontend.Tensor) *frontend.Tensor {
		x = nn.MaxPool2d{Kernel: 3, Stride: 2, Padding: 1}.Forward(bn1.Forward(c1.Forward(x)).Relu())
		y := bn3.Forward(c3.Forward(bn2.Forward(c2.Forward(x)).Relu())).Add(x).Relu()
		return fc.Forward(nn.Flatten{}.Forward(nn.AdaptiveAvgPool2d{OutH: 1, OutW: 1}.Forward(y)))
	}
	batches := []int{1, 3, 2}
	var xs, wants []*frontend.Tensor
	for i, n := range batches {
		x := nn.NewRNG(uint64(90+i)).Uniform(-1, 1, n, c, h, w)
		xs, wants = append(xs, x), append(wants, ref(x.Cast(frontend.Float64)))
		if err := wants[i].Err(); err != nil {
			t.Fatal(err)
		}
	}
	macs := 3 * ((h+1)/2*((w+1)/2)*width*c*9 + 2*((h+3)/4)*((w+3)/4)*width*width*9) // the largest batch's
	forPaths(t, macs, frontend.Float32, func(t *testing.T, opts frontend.Options) {
		l, err := frontend.Load(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range xs {
			got, err := l.Call(x)
			called(t, fmt.Sprintf("batch %d", batches[i]), err)
			closeTo(t, fmt.Sprintf("logits at batch %d", batches[i]), got[0], wants[i].Shape(), wants[i].Float64s(), tolOf(frontend.Float32))
		}
	})
}

// scales adds Resize's scales, float32 in a float16 model too.
func (b *onnxBuilder) scales(name string, vs ...float32) string {
	b.g.Initializers = append(b.g.Initializers, &onnx.Tensor{Name: name, Dims: []int64{int64(len(vs))}, DataType: onnx.TypeFloat, FloatData: vs})
	return name
}

// int64s adds an int64 initializer (a shape or split sizes).
func (b *onnxBuilder) int64s(name string, vs ...int64) string {
	raw := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
	}
	b.g.Initializers = append(b.g.Initializers, &onnx.Tensor{Name: name, Dims: []int64{int64(len(vs))}, DataType: onnx.TypeInt64, RawData: raw, HasRaw: true})
	return name
}

// TestShapesONNXTransformer loads a pre-norm transformer block as
// torch.onnx.export writes one (opset 17): LayerNormalization, a fused
// qkv MatMul split by Split with sizes, Reshape with 0 (copy) and -1,
// Transposes to heads and to kᵀ, a scaled batched MatMul, an additive
// causal mask of -inf, Softmax, the erf form of GELU, residual Adds; 7
// tokens, 3 heads of 24, 5 heads of 8 (batch 2), and 3 heads of 8
// exported in float16, on every model path against the eager interpreter
// of the imported graph.
func TestShapesONNXTransformer(t *testing.T) {
	const tt, hidden = 7, 100
	for i, c := range []struct {
		n     int
		h, dh int64
		half  bool // exported in float16
	}{{1, 3, 24, false}, {2, 5, 8, false}, {2, 3, 8, true}} {
		n, h, dh, d := c.n, c.h, c.dh, c.h*c.dh
		dt, elem := frontend.Float32, int32(onnx.TypeFloat)
		if c.half {
			dt, elem = frontend.Float16, onnx.TypeFloat16
		}
		t.Run(fmt.Sprintf("n%d_h%d_dh%d/%v", n, h, dh, dt), func(t *testing.T) {
			b := &onnxBuilder{rng: rand.New(rand.NewPCG(5, uint64(i))), half: c.half}
			b.g.Name = "block"
			b.g.Inputs = []*onnx.ValueInfo{{Name: "x", ElemType: elem, HasShape: true, Dims: []onnx.Dim{
				{Value: int64(n), HasValue: true}, {Value: tt, HasValue: true}, {Value: d, HasValue: true}}}}
			ln := func(in, p string) string {
				return b.node("LayerNormalization", []string{in, b.positive(p+"_g", 0.5, 1.5, d), b.weight(p+"_b", d)}, p,
					oint("axis", -1), &onnx.Attribute{Name: "epsilon", Type: onnx.AttrFloat, F: 1e-5})
			}
			qkv := b.node("MatMul", []string{ln("x", "ln1"), b.weight("wqkv", d, 3*d)}, "qkv0")
			qkv = b.node("Add", []string{qkv, b.weight("bqkv", 3*d)}, "qkv")
			b.g.Nodes = append(b.g.Nodes, &onnx.Node{OpType: "Split", Name: "split", Inputs: []string{qkv, b.int64s("sizes", d, d, d)},
				Outputs: []string{"q0", "k0", "v0"}, Attrs: []*onnx.Attribute{oint("axis", 2)}})
			heads := b.int64s("heads", 0, 0, h, dh)
			q := b.node("Transpose", []string{b.node("Reshape", []string{"q0", heads}, "q1")}, "q", ints("perm", 0, 2, 1, 3))
			kT := b.node("Transpose", []string{b.node("Reshape", []string{"k0", heads}, "k1")}, "kT", ints("perm", 0, 2, 3, 1))
			v := b.node("Transpose", []string{b.node("Reshape", []string{"v0", heads}, "v1")}, "v", ints("perm", 0, 2, 1, 3))
			s := b.node("Div", []string{b.node("MatMul", []string{q, kT}, "s0"), b.scalar("sqrt_dh", float32(math.Sqrt(float64(dh))))}, "s1")
			mask := make([]float32, tt*tt)
			for i := range tt {
				for j := i + 1; j < tt; j++ {
					mask[i*tt+j] = float32(math.Inf(-1))
				}
			}
			b.floats("mask", []int64{1, 1, tt, tt}, mask)
			p := b.node("Softmax", []string{b.node("Add", []string{s, "mask"}, "s2")}, "p", oint("axis", -1))
			o := b.node("Transpose", []string{b.node("MatMul", []string{p, v}, "o0")}, "o1", ints("perm", 0, 2, 1, 3))
			o = b.node("Reshape", []string{o, b.int64s("merge", 0, 0, -1)}, "o2")
			o = b.node("Add", []string{b.node("MatMul", []string{o, b.weight("wo", d, d)}, "o3"), b.weight("bo", d)}, "o")
			x2 := b.node("Add", []string{"x", o}, "x2")
			m := b.node("Add", []string{b.node("MatMul", []string{ln(x2, "ln2"), b.weight("w1", d, hidden)}, "m0"), b.weight("b1", hidden)}, "m1")
			// GELU as torch exports it before opset 20: 0.5·m·(1 + erf(m/√2)).
			erf := b.node("Erf", []string{b.node("Div", []string{m, b.scalar("sqrt2", float32(math.Sqrt2))}, "m2")}, "m3")
			g := b.node("Mul", []string{b.node("Mul", []string{m, b.node("Add", []string{erf, b.scalar("one", 1)}, "m4")}, "m5"), b.scalar("half", 0.5)}, "m6")
			m = b.node("Add", []string{b.node("MatMul", []string{g, b.weight("w2", hidden, d)}, "m7"), b.weight("b2", d)}, "m8")
			b.g.Outputs = []*onnx.ValueInfo{{Name: b.node("Add", []string{x2, m}, "y"), ElemType: elem}}
			model := &onnx.Model{IRVersion: 8, ProducerName: "strata-test", Opsets: []onnx.OpsetID{{Version: 17}}, Graph: &b.g}
			path := filepath.Join(t.TempDir(), "block.onnx")
			if err := os.WriteFile(path, model.Marshal(), 0o644); err != nil {
				t.Fatal(err)
			}
			x := nn.NewRNG(uint64(n)).Uniform(-1, 1, n, tt, int(d)).Cast(dt)
			ref, err := frontend.Load(path, frontend.Options{Backend: frontend.EagerBackend})
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Call(x)
			if err != nil {
				t.Fatal(err)
			}
			forPaths(t, n*tt*int(4*d*d+2*d*hidden+2*tt*d), dt, func(t *testing.T, opts frontend.Options) {
				l, err := frontend.Load(path, opts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := l.Call(x)
				called(t, "block", err)
				if got[0].DType() != dt {
					t.Errorf("the output is %v, want %v", got[0].DType(), dt)
				}
				closeTo(t, "block", got[0], want[0].Shape(), want[0].Float64s(), tolOf(dt))
			})
		})
	}
}
