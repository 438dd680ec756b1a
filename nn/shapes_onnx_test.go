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
	// nodes adds the model's nodes after the input "x" and returns the
	// output names.
	nodes func(b *onnxBuilder) []string
}

// onnxBuilder assembles an ONNX graph.
type onnxBuilder struct {
	g   onnx.Graph
	rng *rand.Rand
}

func (b *onnxBuilder) weight(name string, dims ...int64) string {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	raw := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(b.rng.Float64()*2-1)))
	}
	b.g.Initializers = append(b.g.Initializers, &onnx.Tensor{Name: name, Dims: dims, DataType: onnx.TypeFloat, RawData: raw, HasRaw: true})
	return name
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
	{"same_upper_stride2_even", 3, 16, 16, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 5, 3, 3, 3), b.weight("b", 5)}, "c",
			ints("kernel_shape", 3, 3), ints("strides", 2, 2), ostr("auto_pad", "SAME_UPPER"))
		return []string{b.node("Relu", []string{c}, "r")}
	}},
	{"same_lower_k4_stride2_odd", 3, 17, 15, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 4, 3, 4, 4)}, "c",
			ints("kernel_shape", 4, 4), ints("strides", 2, 2), ostr("auto_pad", "SAME_LOWER"))
		return []string{c}
	}},
	{"asymmetric_pads_nonsquare", 5, 15, 17, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 7, 5, 3, 5), b.weight("b", 7)}, "c",
			ints("kernel_shape", 3, 5), ints("strides", 1, 3), ints("pads", 1, 0, 2, 3), ints("dilations", 2, 1))
		return []string{c}
	}},
	{"depthwise_asymmetric", 6, 15, 15, func(b *onnxBuilder) []string {
		c := b.node("Conv", []string{"x", b.weight("w", 6, 1, 3, 3), b.weight("b", 6)}, "c",
			ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 0, 0, 1, 1), oint("group", 6))
		return []string{b.node("Relu", []string{c}, "r")}
	}},
	{"maxpool_ceil", 3, 15, 16, func(b *onnxBuilder) []string {
		return []string{b.node("MaxPool", []string{"x"}, "p", ints("kernel_shape", 3, 3), ints("strides", 2, 2), oint("ceil_mode", 1))}
	}},
	{"avgpool_ceil_excl_pad", 3, 17, 15, func(b *onnxBuilder) []string {
		return []string{b.node("AveragePool", []string{"x"}, "p", ints("kernel_shape", 3, 2), ints("strides", 2, 3),
			ints("pads", 1, 0, 1, 1), oint("ceil_mode", 1), oint("count_include_pad", 0))}
	}},
	{"stem_to_head", 3, 31, 31, func(b *onnxBuilder) []string {
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
			t.Run(fmt.Sprintf("%s/n%d", m.name, n), func(t *testing.T) {
				b := &onnxBuilder{rng: rand.New(rand.NewPCG(uint64(i), 1))}
				b.g.Name = m.name
				b.g.Inputs = []*onnx.ValueInfo{{Name: "x", ElemType: onnx.TypeFloat, HasShape: true, Dims: []onnx.Dim{
					{Value: int64(n), HasValue: true}, {Value: int64(m.c), HasValue: true}, {Value: int64(m.h), HasValue: true}, {Value: int64(m.w), HasValue: true}}}}
				for _, o := range m.nodes(b) {
					b.g.Outputs = append(b.g.Outputs, &onnx.ValueInfo{Name: o, ElemType: onnx.TypeFloat})
				}
				model := &onnx.Model{IRVersion: 8, ProducerName: "strata-test", Opsets: []onnx.OpsetID{{Version: 13}}, Graph: &b.g}
				path := filepath.Join(t.TempDir(), "model.onnx")
				if err := os.WriteFile(path, model.Marshal(), 0o644); err != nil {
					t.Fatal(err)
				}
				x := nn.NewRNG(uint64(i)).Uniform(-1, 1, n, m.c, m.h, m.w)
				ref, err := frontend.Load(path, frontend.Options{Backend: frontend.EagerBackend})
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Call(x)
				if err != nil {
					t.Fatal(err)
				}
				forPaths(t, x.Shape()[0]*m.c*m.h*m.w*30, frontend.Float32, func(t *testing.T, opts frontend.Options) {
					l, err := frontend.Load(path, opts)
					if err != nil {
						t.Fatal(err)
					}
					got, err := l.Call(x)
					called(t, m.name, err)
					for k := range want {
						closeTo(t, fmt.Sprintf("output %d", k), got[k], want[k].Shape(), want[k].Float64s(), tolOf(frontend.Float32))
					}
				})
			})
		}
	}
}
