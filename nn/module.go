package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/strata-ir/strata/frontend"
)

// Ref is one tensor of a module: a parameter (trained by an optimizer) or
// a buffer (state that is not trained, such as batch norm's running
// statistics). Ptr points at the module's field, so writing *Ptr replaces
// the tensor in the module.
type Ref struct {
	// Name is the field's dotted path from the root module, in the
	// PyTorch state_dict style: "layers.0.attn.qkv.weight". Field names are
	// written in lower case, with the Go name's words joined by '_'
	// (RunningMean → running_mean).
	Name   string
	Ptr    **frontend.Tensor
	Buffer bool
	// Float32 marks a parameter Autocast leaves float32 (a field tagged
	// `nn:"float32"`): batch norm's weight and bias, which PyTorch's
	// autocast also keeps float32.
	Float32 bool
}

// Tensor returns the tensor the reference points at.
func (r Ref) Tensor() *frontend.Tensor { return *r.Ptr }

var (
	tensorPtrType = reflect.TypeFor[*frontend.Tensor]()
	boolType      = reflect.TypeFor[bool]()
)

// Refs returns every tensor of module m (a pointer to a struct) in field
// order, walking nested structs, pointers to structs, interfaces, slices,
// arrays and maps with string keys (in sorted key order). A *Tensor field
// is a parameter, or a buffer when tagged `nn:"buffer"` (or inside a field
// so tagged); fields tagged `nn:"-"` and unexported fields are skipped; a
// *Tensor field tagged `nn:"float32"` is one Autocast leaves float32
// (Ref.Float32); a tag word other than these renames the field
// (`nn:"ln_1"`). A nil *Tensor (a layer
// without bias) is skipped. The same tensor field reached twice (a tied
// weight held through a pointer) is listed once, under its first name.
func Refs(m any) []Ref {
	var out []Ref
	seen := map[**frontend.Tensor]bool{}
	walk(reflect.ValueOf(m), "", false, func(name string, p **frontend.Tensor, buffer, f32 bool) {
		if *p == nil || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, Ref{Name: name, Ptr: p, Buffer: buffer, Float32: f32})
	})
	return out
}

// Modules returns every *T reachable from module m through exported
// struct fields, pointers, interfaces, slices, arrays and maps, each once
// (nn.Modules[nn.Linear](model) lists a model's linear layers); the order
// is field order but for maps'.
func Modules[T any](m any) []*T {
	var out []*T
	type key struct {
		t reflect.Type
		p uintptr
	}
	seen := map[key]bool{}
	var visit func(v reflect.Value)
	visit = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			k := key{v.Type(), v.Pointer()}
			if v.IsNil() || v.Type() == tensorPtrType || seen[k] {
				return
			}
			seen[k] = true
			if p, ok := v.Interface().(*T); ok {
				out = append(out, p)
			}
			visit(v.Elem())
		case reflect.Interface:
			if !v.IsNil() {
				visit(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					visit(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				visit(v.Index(i))
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				visit(iter.Value())
			}
		}
	}
	visit(reflect.ValueOf(m))
	return out
}

// Parameters returns the parameters of m (Refs without buffers).
func Parameters(m any) []Ref { return filter(Refs(m), false) }

// Buffers returns the buffers of m.
func Buffers(m any) []Ref { return filter(Refs(m), true) }

func filter(rs []Ref, buffer bool) []Ref {
	var out []Ref
	for _, r := range rs {
		if r.Buffer == buffer {
			out = append(out, r)
		}
	}
	return out
}

// Tensors returns the tensors the refs point at.
func Tensors(rs []Ref) []*frontend.Tensor {
	out := make([]*frontend.Tensor, len(rs))
	for i, r := range rs {
		out[i] = *r.Ptr
	}
	return out
}

// SetTensors writes ts into the fields of rs, one for one.
func SetTensors(rs []Ref, ts []*frontend.Tensor) error {
	if len(rs) != len(ts) {
		return fmt.Errorf("nn: SetTensors: %d references, %d tensors", len(rs), len(ts))
	}
	for i, r := range rs {
		*r.Ptr = ts[i]
	}
	return nil
}

// NumElements returns the number of elements of the tensors of rs.
func NumElements(rs []Ref) int {
	n := 0
	for _, r := range rs {
		n += (*r.Ptr).Len()
	}
	return n
}

func walk(v reflect.Value, name string, buffer bool, visit func(name string, p **frontend.Tensor, buffer, f32 bool)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.Type() == tensorPtrType {
			return // reached only through an interface: not addressable
		}
		walk(v.Elem(), name, buffer, visit)
	case reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), name, buffer, visit)
		}
	case reflect.Struct:
		for _, f := range structFields(v.Type()) {
			fv := v.Field(f.index)
			child := name
			if !f.embedded {
				child = join(name, f.name)
			}
			if f.tensor {
				if fv.CanAddr() {
					visit(child, fv.Addr().Interface().(**frontend.Tensor), f.tag.buffer || buffer, f.tag.float32)
				}
				continue
			}
			walk(fv, child, f.tag.buffer || buffer, visit)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			e := v.Index(i)
			n := join(name, strconv.Itoa(i))
			if e.Type() == tensorPtrType {
				if e.CanAddr() {
					visit(n, e.Addr().Interface().(**frontend.Tensor), buffer, false)
				}
				continue
			}
			walk(e, n, buffer, visit)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		keys := v.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.String()
		}
		slices.Sort(names)
		for _, k := range names {
			e := v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))
			// Map elements are not addressable: only modules held by
			// pointer inside a map are walked.
			walk(e, join(name, k), buffer, visit)
		}
	}
}

// structField is what walk reads of a struct type's field, once per
// type: Autocast walks a module every call of a training step (ResNet-50:
// 0.3 ms a step parsing the same tags and names again, before the step's
// first launch).
type structField struct {
	index    int
	name     string // the field's name in Refs
	embedded bool   // an embedded field without a name tag: its fields are its parent's
	tensor   bool   // a *frontend.Tensor field
	tag      fieldTag
}

// structFieldCache maps a struct type to its walked fields.
var structFieldCache sync.Map // reflect.Type → []structField

// structFields returns the exported, not skipped fields of struct type t.
func structFields(t reflect.Type) []structField {
	if fs, ok := structFieldCache.Load(t); ok {
		return fs.([]structField)
	}
	var fs []structField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := parseTag(f.Tag.Get("nn"))
		if !f.IsExported() || tag.skip {
			continue
		}
		name := snake(f.Name)
		if tag.name != "" {
			name = tag.name
		}
		fs = append(fs, structField{index: i, name: name, embedded: f.Anonymous && tag.name == "", tensor: f.Type == tensorPtrType, tag: tag})
	}
	structFieldCache.Store(t, fs)
	return fs
}

// fieldTag is a parsed `nn:"…"` struct tag: a comma-separated list of
// "-" (skip the field), "buffer" (its tensors are buffers), "float32"
// (Autocast leaves it float32) and any other word, the field's name in
// Refs ("ln_1").
type fieldTag struct {
	skip, buffer, float32 bool
	name                  string
}

func parseTag(s string) fieldTag {
	var t fieldTag
	for _, w := range strings.Split(s, ",") {
		switch w {
		case "":
		case "-":
			t.skip = true
		case "buffer":
			t.buffer = true
		case "float32":
			t.float32 = true
		default:
			t.name = w
		}
	}
	return t
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// snake writes a Go field name in lower case with its words joined by
// '_': Weight → weight, RunningMean → running_mean, QKV → qkv, LNf → l_nf
// (a run of capitals is one word).
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		upper := r >= 'A' && r <= 'Z'
		if upper && i > 0 {
			prevLower := rs[i-1] >= 'a' && rs[i-1] <= 'z' || rs[i-1] >= '0' && rs[i-1] <= '9'
			nextLower := i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z'
			prevUpper := rs[i-1] >= 'A' && rs[i-1] <= 'Z'
			if prevLower || prevUpper && nextLower {
				b.WriteByte('_')
			}
		}
		if upper {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// SetTraining switches every module inside m to training (true) or
// evaluation (false) mode: it sets each exported bool field named
// Training, as torch's module.train() and module.eval() do. Batch norm
// uses batch statistics and updates its running averages in training
// mode, and dropout drops only in training mode.
func SetTraining(m any, training bool) {
	setTraining(reflect.ValueOf(m), training)
}

func setTraining(v reflect.Value, on bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			setTraining(v.Elem(), on)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || parseTag(f.Tag.Get("nn")).skip {
				continue
			}
			fv := v.Field(i)
			if f.Name == "Training" && f.Type == boolType && fv.CanSet() {
				fv.SetBool(on)
				continue
			}
			if f.Type != tensorPtrType {
				setTraining(fv, on)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			setTraining(v.Index(i), on)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			setTraining(v.MapIndex(k), on)
		}
	}
}

// Cast converts every parameter and floating-point buffer of m to dt (in
// place: the module's fields are replaced).
func Cast(m any, dt frontend.DType) error {
	for _, r := range Refs(m) {
		t := *r.Ptr
		if !t.DType().IsFloat() || t.DType() == dt {
			continue
		}
		c := t.Cast(dt)
		if err := c.Err(); err != nil {
			return fmt.Errorf("nn: Cast %s: %w", r.Name, err)
		}
		// Run the cast now: a module's tensors are concrete.
		if c.Float64s() == nil && c.Len() > 0 {
			return fmt.Errorf("nn: Cast %s: %w", r.Name, c.Err())
		}
		*r.Ptr = c
	}
	return nil
}

// RNG makes the deterministic initial values of parameters: the same seed
// gives the same model.
type RNG struct{ r *rand.Rand }

// NewRNG returns a generator seeded with seed.
func NewRNG(seed uint64) *RNG {
	return &RNG{rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
}

// Uniform returns a float32 tensor of the shape with elements uniform in
// [lo, hi).
func (g *RNG) Uniform(lo, hi float64, shape ...int) *frontend.Tensor {
	data := make([]float32, count(shape))
	for i := range data {
		data[i] = float32(lo + (hi-lo)*g.r.Float64())
	}
	return frontend.FromSlice(data, shape...)
}

// Normal returns a float32 tensor of the shape with elements drawn from
// N(0, std²).
func (g *RNG) Normal(std float64, shape ...int) *frontend.Tensor {
	data := make([]float32, count(shape))
	for i := range data {
		data[i] = float32(std * g.r.NormFloat64())
	}
	return frontend.FromSlice(data, shape...)
}

// Int64s returns an int64 tensor of the shape with elements uniform in
// [0, n).
func (g *RNG) Int64s(n int, shape ...int) *frontend.Tensor {
	data := make([]int64, count(shape))
	for i := range data {
		data[i] = g.r.Int64N(int64(n))
	}
	return frontend.FromSlice(data, shape...)
}

// Uint64 returns a random 64-bit value (to seed another generator).
func (g *RNG) Uint64() uint64 { return g.r.Uint64() }

// kaiming returns PyTorch's default initialisation of a weight with
// fan-in fanIn: uniform in ±1/√fanIn (kaiming_uniform with a = √5).
func (g *RNG) kaiming(fanIn int, shape ...int) *frontend.Tensor {
	b := 1 / math.Sqrt(float64(fanIn))
	return g.Uniform(-b, b, shape...)
}

func count(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= max(d, 0)
	}
	return n
}
