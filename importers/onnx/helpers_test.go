package onnx

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

// builder writes ONNX models in tests.
type builder struct {
	g     Graph
	opset int64
	rng   *rand.Rand
}

func newBuilder(opset int64) *builder {
	return &builder{opset: opset, rng: rand.New(rand.NewPCG(1, uint64(opset)))}
}

// input declares a float input; dims are int (static) or string (dim_param).
func (b *builder) input(name string, elem int32, dims ...any) {
	vi := &ValueInfo{Name: name, ElemType: elem, HasShape: true}
	for _, d := range dims {
		switch d := d.(type) {
		case int:
			vi.Dims = append(vi.Dims, Dim{Value: int64(d), HasValue: true})
		case string:
			vi.Dims = append(vi.Dims, Dim{Param: d})
		}
	}
	b.g.Inputs = append(b.g.Inputs, vi)
}

func (b *builder) output(names ...string) {
	for _, n := range names {
		b.g.Outputs = append(b.g.Outputs, &ValueInfo{Name: n, ElemType: TypeFloat})
	}
}

// weight adds a float initializer of random values in [-1, 1) as raw data
// and returns the values.
func (b *builder) weight(name string, dims ...int64) []float64 {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	vs := make([]float64, n)
	raw := make([]byte, 4*n)
	for i := range vs {
		f := float32(b.rng.Float64()*2 - 1)
		vs[i] = float64(f)
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	b.g.Initializers = append(b.g.Initializers, &Tensor{Name: name, Dims: dims, DataType: TypeFloat, RawData: raw, HasRaw: true})
	return vs
}

// floats adds a float initializer with the given values (float_data).
func (b *builder) floats(name string, dims []int64, vs ...float32) {
	b.g.Initializers = append(b.g.Initializers, &Tensor{Name: name, Dims: dims, DataType: TypeFloat, FloatData: vs})
}

// ints adds a 1-D int64 initializer.
func (b *builder) ints(name string, vs ...int64) {
	b.g.Initializers = append(b.g.Initializers, &Tensor{Name: name, Dims: []int64{int64(len(vs))}, DataType: TypeInt64, Int64Data: vs})
}

func (b *builder) node(op string, ins, outs []string, attrs ...*Attribute) {
	b.g.Nodes = append(b.g.Nodes, &Node{OpType: op, Name: op + "_" + outs[0], Inputs: ins, Outputs: outs, Attrs: attrs})
}

func aInts(name string, vs ...int64) *Attribute {
	return &Attribute{Name: name, Type: AttrInts, Ints: vs}
}
func aInt(name string, v int64) *Attribute { return &Attribute{Name: name, Type: AttrInt, I: v} }
func aStr(name, v string) *Attribute       { return &Attribute{Name: name, Type: AttrString, S: []byte(v)} }
func aFloat(name string, v float32) *Attribute {
	return &Attribute{Name: name, Type: AttrFloat, F: v}
}
func aTensor(name string, t *Tensor) *Attribute {
	return &Attribute{Name: name, Type: AttrTensor, T: t}
}

func (b *builder) model() *Model {
	return &Model{IRVersion: 8, ProducerName: "strata-test", Opsets: []OpsetID{{Version: b.opset}}, Graph: &b.g}
}

// write saves the model in a temporary directory and returns its path.
func (b *builder) write(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, b.model().Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// importFile imports path (round-tripping the model through its bytes).
func importFile(t *testing.T, path string) *ir.Operation {
	t.Helper()
	mod, err := Import(dialects.NewContext(), path, Options{})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return mod
}

// call runs @main of mod on float32 inputs.
func call(t *testing.T, mod *ir.Operation, ins ...*interp.Tensor) []*interp.Tensor {
	t.Helper()
	args := make([]interp.Value, len(ins))
	for i, x := range ins {
		args[i] = x
	}
	res, err := interp.New(mod).Call("main", args...)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	out := make([]*interp.Tensor, len(res))
	for i, r := range res {
		out[i] = r.(*interp.Tensor)
	}
	return out
}

// randTensor is a float32 tensor of uniform values in [-2, 2) and its
// values in float64.
func randTensor(t *testing.T, rng *rand.Rand, shape ...int64) (*interp.Tensor, []float64) {
	t.Helper()
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = float64(float32(rng.Float64()*4 - 2))
	}
	x, err := interp.FromFloat64s(ir.F32, shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	return x, vs
}

// near checks got (a float or an integer tensor) against the float64
// reference want.
func near(t *testing.T, what string, got *interp.Tensor, shape []int64, want []float64, tol float64) {
	t.Helper()
	if len(got.Shape()) != len(shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	for i, d := range shape {
		if got.Shape()[i] != d {
			t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
		}
	}
	g := got.Float64s()
	if !ir.IsFloat(got.ElemType()) { // Float64s reads float tensors only
		for i, v := range got.Int64s() {
			g[i] = float64(v)
		}
	}
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range g {
		if d := math.Abs(g[i] - want[i]); d > tol*(1+math.Abs(want[i])) || math.IsNaN(g[i]) != math.IsNaN(want[i]) {
			t.Fatalf("%s: element %d is %v, want %v (|diff| %g)", what, i, g[i], want[i], d)
		}
	}
}

// --- float64 references ---

// refMatmul is [m,k]·[k,n].
func refMatmul(a, b []float64, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += a[i*k+p] * b[p*n+j]
			}
			out[i*n+j] = s
		}
	}
	return out
}

func refTranspose(a []float64, m, n int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			out[j*m+i] = a[i*n+j]
		}
	}
	return out
}

// refConv is a 2-D NCHW convolution with groups, stride and padding.
func refConv(x []float64, n, c, h, w int, wt []float64, o, kh, kw int, bias []float64, stride, pad, groups int) ([]float64, int, int) {
	oh := (h+2*pad-kh)/stride + 1
	ow := (w+2*pad-kw)/stride + 1
	cg, og := c/groups, o/groups
	out := make([]float64, n*o*oh*ow)
	for b := range n {
		for oc := range o {
			g := oc / og
			for i := range oh {
				for j := range ow {
					s := bias[oc]
					for ic := range cg {
						for u := range kh {
							for v := range kw {
								y, z := i*stride-pad+u, j*stride-pad+v
								if y < 0 || y >= h || z < 0 || z >= w {
									continue
								}
								s += x[((b*c+g*cg+ic)*h+y)*w+z] * wt[((oc*cg+ic)*kh+u)*kw+v]
							}
						}
					}
					out[((b*o+oc)*oh+i)*ow+j] = s
				}
			}
		}
	}
	return out, oh, ow
}

// refPool is max or average pooling of NCHW x with square kernels and
// padding (pt, pl, pb, pr); the average counts in-input elements only.
func refPool(x []float64, nc, h, w, k, stride int, pads [4]int, avg bool) ([]float64, int, int) {
	oh := (h+pads[0]+pads[2]-k)/stride + 1
	ow := (w+pads[1]+pads[3]-k)/stride + 1
	out := make([]float64, nc*oh*ow)
	for p := range nc {
		for i := range oh {
			for j := range ow {
				best, sum, cnt := math.Inf(-1), 0.0, 0
				for u := range k {
					for v := range k {
						y, z := i*stride-pads[0]+u, j*stride-pads[1]+v
						if y < 0 || y >= h || z < 0 || z >= w {
							continue
						}
						e := x[(p*h+y)*w+z]
						best = math.Max(best, e)
						sum += e
						cnt++
					}
				}
				if avg {
					out[(p*oh+i)*ow+j] = sum / float64(cnt)
				} else {
					out[(p*oh+i)*ow+j] = best
				}
			}
		}
	}
	return out, oh, ow
}

func refSoftmaxRows(x []float64, n int) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x); r += n {
		m := math.Inf(-1)
		for _, v := range x[r : r+n] {
			m = math.Max(m, v)
		}
		var s float64
		for i := range n {
			out[r+i] = math.Exp(x[r+i] - m)
			s += out[r+i]
		}
		for i := range n {
			out[r+i] /= s
		}
	}
	return out
}

func refLayerNormRows(x []float64, n int, w, b []float64, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x); r += n {
		var mean, v float64
		for _, e := range x[r : r+n] {
			mean += e
		}
		mean /= float64(n)
		for _, e := range x[r : r+n] {
			v += (e - mean) * (e - mean)
		}
		v /= float64(n)
		for i := range n {
			out[r+i] = (x[r+i]-mean)/math.Sqrt(v+eps)*w[i] + b[i]
		}
	}
	return out
}

// npyRead reads a float32 or int64 .npy file as a tensor.
func npyRead(path string) (*interp.Tensor, error) {
	arr, err := npy.ReadFile(path)
	if err != nil {
		return nil, err
	}
	elem := ir.Type(ir.F32)
	if arr.DType == npy.Int64 {
		elem = ir.I64
	}
	v, err := interp.FromNPY(arr, ir.TensorOf(arr.Shape, elem))
	if err != nil {
		return nil, err
	}
	return v.(*interp.Tensor), nil
}
