package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
)

// ToFrontend returns t as a frontend tensor of the matching dtype (F16
// and BF16 values are decoded exactly and cast to Float16 / BFloat16).
func ToFrontend(t *Tensor) (*frontend.Tensor, error) {
	n := t.Len()
	if len(t.Data) != n*t.DType.Size() {
		return nil, fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v of %s", t.Name, len(t.Data), t.Shape, t.DType)
	}
	le := binary.LittleEndian
	var x *frontend.Tensor
	switch t.DType {
	case F32, F16, BF16:
		fs := make([]float32, n)
		for i := range fs {
			switch t.DType {
			case F32:
				fs[i] = math.Float32frombits(le.Uint32(t.Data[4*i:]))
			case BF16:
				fs[i] = math.Float32frombits(uint32(le.Uint16(t.Data[2*i:])) << 16)
			default:
				fs[i] = halfToFloat(le.Uint16(t.Data[2*i:]))
			}
		}
		x = frontend.FromSlice(fs, t.Shape...)
		switch t.DType {
		case BF16:
			x = x.Cast(frontend.BFloat16)
		case F16:
			x = x.Cast(frontend.Float16)
		}
	case F64:
		fs := make([]float64, n)
		for i := range fs {
			fs[i] = math.Float64frombits(le.Uint64(t.Data[8*i:]))
		}
		x = frontend.FromSlice(fs, t.Shape...)
	case I64:
		is := make([]int64, n)
		for i := range is {
			is[i] = int64(le.Uint64(t.Data[8*i:]))
		}
		x = frontend.FromSlice(is, t.Shape...)
	case I32:
		is := make([]int32, n)
		for i := range is {
			is[i] = int32(le.Uint32(t.Data[4*i:]))
		}
		x = frontend.FromSlice(is, t.Shape...)
	case Bool:
		bs := make([]bool, n)
		for i := range bs {
			bs[i] = t.Data[i] != 0
		}
		x = frontend.FromSlice(bs, t.Shape...)
	default:
		return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
	}
	if err := x.Err(); err != nil {
		return nil, fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
	}
	return x, nil
}

// DTypeOf returns the safetensors dtype of a frontend dtype.
func DTypeOf(dt frontend.DType) (DType, error) {
	switch dt {
	case frontend.Float32:
		return F32, nil
	case frontend.Float64:
		return F64, nil
	case frontend.Float16:
		return F16, nil
	case frontend.BFloat16:
		return BF16, nil
	case frontend.Int64:
		return I64, nil
	case frontend.Int32:
		return I32, nil
	case frontend.Bool:
		return Bool, nil
	}
	return "", fmt.Errorf("safetensors: no dtype for %v", dt)
}

// FromFrontend encodes x (read from wherever it is) as a tensor named
// name of dtype dt; float values are rounded to dt (nearest, ties to
// even).
func FromFrontend(name string, x *frontend.Tensor, dt DType) (*Tensor, error) {
	if err := x.Err(); err != nil {
		return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	size := dt.Size()
	if size == 0 {
		return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, dt)
	}
	n := x.Len()
	out := &Tensor{Name: name, DType: dt, Shape: x.Shape(), Data: make([]byte, n*size)}
	le := binary.LittleEndian
	switch dt {
	case I64, I32, Bool:
		is := x.Int64s()
		if err := x.Err(); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		for i, v := range is {
			switch dt {
			case I64:
				le.PutUint64(out.Data[8*i:], uint64(v))
			case I32:
				le.PutUint32(out.Data[4*i:], uint32(int32(v)))
			default:
				if v != 0 {
					out.Data[i] = 1
				}
			}
		}
	default:
		fs := x.Float64s()
		if err := x.Err(); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		for i, v := range fs {
			switch dt {
			case F64:
				le.PutUint64(out.Data[8*i:], math.Float64bits(v))
			case F32:
				le.PutUint32(out.Data[4*i:], math.Float32bits(float32(v)))
			case BF16:
				le.PutUint16(out.Data[2*i:], floatToBF16(float32(v)))
			case F16:
				le.PutUint16(out.Data[2*i:], floatToHalf(float32(v)))
			}
		}
	}
	return out, nil
}

// LoadOptions relax Load's checks.
type LoadOptions struct {
	// Prefix is stripped from the file's names before matching
	// ("transformer." for some GPT-2 checkpoints).
	Prefix string
	// AllowMissing accepts a model tensor the file lacks (it keeps its
	// value); AllowUnused accepts file tensors the model lacks (GPT-2
	// checkpoints hold the attention masks "h.N.attn.bias").
	AllowMissing, AllowUnused bool
	// TorchLinear says the file holds the weights of nn.Linear layers as
	// torch.nn.Linear stores them, [out, in] (a PyTorch model's state
	// dict): they are transposed into Linear's [in, out]. Without it a
	// square weight would load transposed, silently: its shape cannot
	// tell. (GPT-2's checkpoints store [in, out], as Linear does.)
	TorchLinear bool
}

// Load sets the parameters and buffers of module m (see nn.Refs for the
// names) from f. Each tensor must have the shape of the model's; its
// values are converted to the model tensor's dtype. Nothing is changed
// unless every tensor loads.
func Load(m any, f *File, o LoadOptions) error {
	byName := map[string]*Tensor{}
	for _, t := range f.Tensors {
		name := t.Name
		if o.Prefix != "" {
			if !strings.HasPrefix(name, o.Prefix) {
				if !o.AllowUnused {
					return fmt.Errorf("safetensors: tensor %q lacks the prefix %q", name, o.Prefix)
				}
				continue
			}
			name = strings.TrimPrefix(name, o.Prefix)
		}
		byName[name] = t
	}
	refs := nn.Refs(m)
	linear := map[**frontend.Tensor]bool{} // the weights of m's Linear layers
	for _, l := range nn.Modules[nn.Linear](m) {
		linear[&l.Weight] = true
	}
	vals := make([]*frontend.Tensor, len(refs))
	used := map[string]bool{}
	var missing []string
	for i, r := range refs {
		t, ok := byName[r.Name]
		if !ok {
			missing = append(missing, r.Name)
			vals[i] = r.Tensor()
			continue
		}
		used[r.Name] = true
		want := r.Tensor().Shape()
		torch := o.TorchLinear && linear[r.Ptr] && len(want) == 2
		if torch {
			want = []int{want[1], want[0]}
		}
		if !slices.Equal(want, t.Shape) {
			hint := ""
			if linear[r.Ptr] && len(want) == 2 && slices.Equal(t.Shape, []int{want[1], want[0]}) {
				hint = " (its transpose: a torch.nn.Linear weight [out, in]? set LoadOptions.TorchLinear)"
			}
			return fmt.Errorf("safetensors: tensor %q has shape %v, the model's %v%s", t.Name, t.Shape, want, hint)
		}
		x, err := ToFrontend(t)
		if err != nil {
			return err
		}
		if torch {
			x = x.Transpose(1, 0)
			x.Float64s() // transpose now: the model's tensors are concrete
			if err := x.Err(); err != nil {
				return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
			}
		}
		if dt := r.Tensor().DType(); x.DType() != dt {
			x = x.Cast(dt)
			x.Float64s() // convert now: the model's tensors are concrete
			if err := x.Err(); err != nil {
				return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
			}
		}
		vals[i] = x
	}
	if len(missing) > 0 && !o.AllowMissing {
		return fmt.Errorf("safetensors: the file lacks %d of the model's tensors: %s", len(missing), list(missing))
	}
	if !o.AllowUnused {
		var unused []string
		for name := range byName {
			if !used[name] {
				unused = append(unused, name)
			}
		}
		if len(unused) > 0 {
			slices.Sort(unused)
			return fmt.Errorf("safetensors: the model has no tensor for %d of the file's: %s", len(unused), list(unused))
		}
	}
	return nn.SetTensors(refs, vals)
}

func list(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(", … (%d more)", len(names)-5)
	}
	return strings.Join(names, ", ")
}

// Save writes the parameters and buffers of module m to a safetensors
// file at path, each in its own dtype.
func Save(path string, m any, metadata map[string]string) error {
	var ts []*Tensor
	for _, r := range nn.Refs(m) {
		dt, err := DTypeOf(r.Tensor().DType())
		if err != nil {
			return err
		}
		t, err := FromFrontend(r.Name, r.Tensor(), dt)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	return Write(path, ts, metadata)
}

// halfToFloat decodes an IEEE 754 binary16 value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0:
		// Zero or subnormal: frac · 2⁻²⁴.
		v := float32(frac) * float32(math.Ldexp(1, -24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | frac<<13)
}

// floatToHalf rounds f to binary16 (nearest, ties to even).
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if f != f {
		return sign | 0x7e00
	}
	a := math.Abs(float64(f))
	if a >= 65520 { // rounds to infinity
		return sign | 0x7c00
	}
	if a < math.Ldexp(1, -14) {
		// Subnormal: round a / 2⁻²⁴ to an integer, ties to even.
		return sign | uint16(math.RoundToEven(a*math.Ldexp(1, 24)))
	}
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	h := uint32(exp)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent, which is right
	}
	return sign | uint16(h)
}

// floatToBF16 rounds f to bfloat16 (nearest, ties to even).
func floatToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
