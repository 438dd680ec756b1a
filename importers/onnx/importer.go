// Package onnx imports ONNX models into the graph dialect.
//
// A model becomes a module with one public function (@main by default)
// whose arguments are the graph's inputs and whose results are its
// outputs. Initializers become graph.constant ops (in text, MLIR's hex
// dense form, written straight from the model's bytes: see WriteMLIR);
// dim_param and unknown dims become symbols (s0, s1, …, in #graph.dims
// encodings), so one import serves every batch size. Shape computations
// on constants and on the shapes of tensors (Shape, Gather, Concat,
// Unsqueeze, Cast, arithmetic, Equal, Where, Range, ConstantOfShape …) are
// folded at import. Operators without a graph op of their own are
// expressed with graph ops: pooling as the max or sum of strided gathers of
// the padded input, BatchNormalization as a folded scale and shift, Gemm as
// matmul and add.
//
// An operator the importer does not support is an error naming the node,
// its op_type and the opset; docs/importers.md lists what is supported.
package onnx

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// Supported opsets of the default domain ("" or "ai.onnx").
const (
	MinOpset = 11
	MaxOpset = 23
)

// ErrSymbolicSizes marks an import error that static sizes for the
// model's dim_params (Options.Dims, DimsFor) avoid: a pooling window over
// symbolic spatial sizes, a reshape to several symbolic sizes, a resized
// or reflected symbolic axis. errors.Is finds it through the node's
// context.
var ErrSymbolicSizes = errors.New("static sizes are needed")

// symbolicError is an import error of kind ErrSymbolicSizes.
type symbolicError struct{ msg string }

func (e *symbolicError) Error() string        { return e.msg }
func (e *symbolicError) Is(target error) bool { return target == ErrSymbolicSizes }

// errSymbolic formats an error of kind ErrSymbolicSizes.
func errSymbolic(format string, args ...any) error {
	return &symbolicError{msg: fmt.Sprintf(format, args...)}
}

// Options configure an import.
type Options struct {
	// FuncName names the function (default "main").
	FuncName string
	// Dims gives static sizes to dim_params by name: an import for those
	// sizes only (what a model whose reshapes need several symbolic sizes
	// needs).
	Dims map[string]int64
	// placeholders makes large initializers splat placeholders marked with
	// weightAttr, whose data WriteMLIR streams into the text.
	placeholders bool
}

// weightAttr marks a placeholder constant with the index of its
// initializer (text import only; it never reaches the output).
const weightAttr = "onnx.weight"

// ReadModel reads and decodes an ONNX file.
func ReadModel(path string) (*Model, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := DecodeModel(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Import reads the ONNX file at path and returns it as a verified module
// of graph ops, its weights held as constants. Tensors with external data
// are read from files relative to the model's directory.
func Import(ctx *ir.Context, path string, opts Options) (*ir.Operation, error) {
	m, err := ReadModel(path)
	if err != nil {
		return nil, err
	}
	return ImportModel(ctx, m, filepath.Base(path), filepath.Dir(path), opts)
}

// ImportModel converts a decoded model; name labels diagnostics and dir is
// where external data files are found.
func ImportModel(ctx *ir.Context, m *Model, name, dir string, opts Options) (*ir.Operation, error) {
	im, err := newImporter(ctx, m, name, dir, opts)
	if err != nil {
		return nil, err
	}
	mod, err := im.run()
	if err != nil {
		return nil, err
	}
	return mod, nil
}

// WriteMLIR imports the ONNX file at path and writes the module as text
// (generic form) to w. Initializers of more than smallLimit elements are
// written straight from the model's bytes (or its external data files) as
// hex dense attributes, so the text import of a large model holds the
// model once and streams its weights.
func WriteMLIR(w io.Writer, ctx *ir.Context, path string, opts Options) error {
	m, err := ReadModel(path)
	if err != nil {
		return err
	}
	opts.placeholders = true
	im, err := newImporter(ctx, m, filepath.Base(path), filepath.Dir(path), opts)
	if err != nil {
		return err
	}
	mod, err := im.run()
	if err != nil {
		return err
	}
	text := ir.Sprint(mod, ir.PrintOptions{Generic: true})
	bw := bufio.NewWriterSize(w, 1<<20)
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		if err := im.writeLine(bw, line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeLine writes one line of the printed module, with a placeholder
// constant's splat replaced by the hex of its initializer's data.
func (im *importer) writeLine(w *bufio.Writer, line string) error {
	at := strings.Index(line, "{"+weightAttr+" = ")
	if at < 0 {
		_, err := w.WriteString(line + "\n")
		return err
	}
	rest := line[at+len(weightAttr)+4:]
	num, after, ok := strings.Cut(rest, " : i64}")
	k, err := strconv.Atoi(num)
	open := strings.Index(line, "dense<")
	closeAt := strings.Index(line, "> : tensor<")
	if !ok || err != nil || k < 0 || k >= len(im.weights) || open < 0 || closeAt < open || closeAt > at {
		return fmt.Errorf("internal error: malformed weight placeholder line %q", line)
	}
	if _, err := w.WriteString(line[:open+len("dense<")] + `"0x`); err != nil {
		return err
	}
	if err := im.streamHex(w, im.weights[k]); err != nil {
		return err
	}
	_, err = w.WriteString(`"` + line[closeAt:at] + strings.TrimPrefix(after, " ") + "\n")
	return err
}

// streamHex writes the little-endian bytes of t, in the graph element type,
// as upper-case hex.
func (im *importer) streamHex(w *bufio.Writer, t *Tensor) error {
	var buf [1 << 15]byte
	emit := func(b []byte) error {
		for len(b) > 0 {
			n := min(len(b), len(buf)/2)
			for i, c := range b[:n] {
				buf[2*i], buf[2*i+1] = upperHex[c>>4], upperHex[c&15]
			}
			if _, err := w.Write(buf[:2*n]); err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	}
	return im.tensorBytes(t, emit)
}

const upperHex = "0123456789ABCDEF"

// importer holds the state of one import.
type importer struct {
	ctx    *ir.Context
	model  *Model
	name   string // the model's file name, for messages
	dir    string
	opts   Options
	opset  int64
	b      *ir.Builder
	values map[string]*val
	// weights are the initializers written as placeholders (text import).
	weights []*Tensor
	symbols map[string]sym.Expr // dim_param → symbol
	// symSource names, for each symbol, a graph input and axis of that size.
	symSource map[string]symDim
	nsyms     int
}

// symDim is an axis of a graph input.
type symDim struct {
	arg  *ir.Value
	axis int
}

// val is an ONNX value during import: an IR value, a known small tensor
// (konst), or a large initializer not yet materialized.
type val struct {
	v    *ir.Value
	k    *konst
	w    *Tensor
	elem ir.Type
	dims []sym.Expr
}

func (x *val) rank() int { return len(x.dims) }

// staticShape returns x's shape when every dim is a constant.
func (x *val) staticShape() ([]int64, bool) {
	out := make([]int64, len(x.dims))
	for i, d := range x.dims {
		c, ok := d.IsConst()
		if !ok {
			return nil, false
		}
		out[i] = c
	}
	return out, true
}

func newImporter(ctx *ir.Context, m *Model, name, dir string, opts Options) (*importer, error) {
	if opts.FuncName == "" {
		opts.FuncName = "main"
	}
	im := &importer{ctx: ctx, model: m, name: name, dir: dir, opts: opts,
		values: map[string]*val{}, symbols: map[string]sym.Expr{}, symSource: map[string]symDim{}}
	im.opset = -1
	for _, o := range m.Opsets {
		switch o.Domain {
		case "", "ai.onnx":
			im.opset = o.Version
		}
	}
	if im.opset < 0 {
		return nil, fmt.Errorf("%s: the model imports no opset of the default ONNX domain", name)
	}
	if im.opset < MinOpset || im.opset > MaxOpset {
		return nil, fmt.Errorf("%s: opset %d is not supported (supported: %d to %d)", name, im.opset, MinOpset, MaxOpset)
	}
	if m.Graph.Sparse > 0 {
		return nil, fmt.Errorf("%s: sparse initializers are not supported", name)
	}
	return im, nil
}

// nodeError is a located import error: the node, its op_type and the
// opset.
func (im *importer) nodeError(idx int, n *Node, err error) error {
	name := n.Name
	if name == "" {
		name = fmt.Sprintf("#%d", idx)
	}
	domain := ""
	if n.Domain != "" && n.Domain != "ai.onnx" {
		domain = fmt.Sprintf(", domain %q", n.Domain)
	}
	var d *ir.Diagnostic
	if errors.As(err, &d) {
		err = errors.New(d.Message)
	}
	return fmt.Errorf("%s: node %d %q (op_type %s%s, opset %d): %w", im.name, idx, name, n.OpType, domain, im.opset, err)
}

// run builds the module.
func (im *importer) run() (*ir.Operation, error) {
	g := im.model.Graph
	mod := builtin.NewModule(ir.NameLoc{Name: im.name})
	im.b = ir.NewBuilder(im.ctx)
	im.b.SetInsertionPointToEnd(builtin.ModuleBody(mod))
	fn, entry := funcs.NewFunc(im.b, im.opts.FuncName, ir.FunctionOf(nil, nil), ir.NameLoc{Name: im.name})
	im.b.SetInsertionPointToEnd(entry)

	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
		v, err := im.initializer(t)
		if err != nil {
			return nil, fmt.Errorf("%s: initializer %q: %w", im.name, t.Name, err)
		}
		im.values[t.Name] = v
	}
	for _, in := range g.Inputs {
		if inits[in.Name] {
			continue // IR version < 4 lists initializers among the inputs
		}
		t, err := im.inputType(in)
		if err != nil {
			return nil, fmt.Errorf("%s: input %q: %w", im.name, in.Name, err)
		}
		arg := entry.AddArgument(t)
		im.values[in.Name] = im.wrap(arg)
		for axis, d := range im.values[in.Name].dims {
			if _, isConst := d.IsConst(); !isConst {
				if _, seen := im.symSource[d.String()]; !seen {
					im.symSource[d.String()] = symDim{arg, axis}
				}
			}
		}
	}
	for i, n := range g.Nodes {
		if err := im.node(i, n); err != nil {
			return nil, im.nodeError(i, n, err)
		}
	}
	var results []*ir.Value
	for _, out := range g.Outputs {
		x, ok := im.values[out.Name]
		if !ok {
			return nil, fmt.Errorf("%s: graph output %q is produced by no node", im.name, out.Name)
		}
		v, err := im.value(x, ir.NameLoc{Name: out.Name})
		if err != nil {
			return nil, fmt.Errorf("%s: graph output %q: %w", im.name, out.Name, err)
		}
		results = append(results, v)
	}
	funcs.Return(im.b, ir.NameLoc{Name: im.name}, results...)
	if err := funcs.UpdateType(fn); err != nil {
		return nil, fmt.Errorf("%s: %w", im.name, err)
	}
	if err := ir.Verify(mod); err != nil {
		return nil, fmt.Errorf("%s: the imported module does not verify: %w", im.name, err)
	}
	return mod, nil
}

// symbol returns the symbol of a dim_param (or a fresh one for an unnamed
// unknown dim).
func (im *importer) symbol(param string) sym.Expr {
	if param != "" {
		if s, ok := im.symbols[param]; ok {
			return s
		}
	}
	s := sym.Sym("s" + strconv.Itoa(im.nsyms))
	im.nsyms++
	if param != "" {
		im.symbols[param] = s
	}
	return s
}

// inputType is the tensor type of a graph input.
func (im *importer) inputType(vi *ValueInfo) (ir.Type, error) {
	if vi.NotTensor || vi.ElemType == 0 {
		return nil, errors.New("only tensor inputs are supported")
	}
	elem, err := elemType(vi.ElemType)
	if err != nil {
		return nil, err
	}
	switch vi.ElemType {
	case TypeInt8, TypeUint8, TypeInt16, TypeUint16, TypeUint32, TypeUint64:
		return nil, fmt.Errorf("inputs of type %s are not supported (the graph dialect has f64, f32, f16, bf16, i64, i32 and i1)", dataTypeName(vi.ElemType))
	}
	if !vi.HasShape {
		return nil, errors.New("the input has no shape (its rank must be known)")
	}
	dims := make([]sym.Expr, len(vi.Dims))
	for i, d := range vi.Dims {
		if v, ok := im.opts.Dims[d.Param]; ok && d.Param != "" && !d.HasValue {
			dims[i] = sym.Const(v)
		} else if d.HasValue && d.Value >= 0 {
			dims[i] = sym.Const(d.Value)
		} else {
			dims[i] = im.symbol(d.Param)
		}
	}
	return graph.TensorWithDims(dims, elem), nil
}

// wrap makes a val of an IR value.
func (im *importer) wrap(v *ir.Value) *val {
	x := &val{v: v}
	if t, ok := v.Type().(*ir.TensorType); ok && t.Ranked() {
		x.elem, x.dims = t.ElementType(), graph.DimsOf(t)
	}
	return x
}

func kval(k *konst) *val {
	return &val{k: k, elem: k.elem, dims: k.dims()}
}

// initializer makes the val of an initializer or a Constant's tensor.
func (im *importer) initializer(t *Tensor) (*val, error) {
	elem, err := elemType(t.DataType)
	if err != nil {
		return nil, err
	}
	n := t.NumElements()
	if n < 0 {
		return nil, fmt.Errorf("negative dims %v", t.Dims)
	}
	if n <= smallLimit {
		k, err := im.decode(t)
		if err != nil {
			return nil, err
		}
		return kval(k), nil
	}
	if !t.IsExternal() {
		if err := checkTensorData(t, t.RawData, t.HasRaw); err != nil {
			return nil, err
		}
	} else if _, _, err := im.externalRange(t); err != nil {
		return nil, err
	}
	dims := make([]sym.Expr, len(t.Dims))
	for i, d := range t.Dims {
		dims[i] = sym.Const(d)
	}
	return &val{w: t, elem: elem, dims: dims}, nil
}

// decode decodes a tensor (external data included) into a konst.
func (im *importer) decode(t *Tensor) (*konst, error) {
	if !t.IsExternal() {
		return konstFromTensor(t, t.RawData, t.HasRaw)
	}
	var raw []byte
	if err := im.tensorBytes(t, func(b []byte) error { raw = append(raw, b...); return nil }); err != nil {
		return nil, err
	}
	return konstFromTensor(t, raw, true)
}

// externalRange resolves a tensor's external data: the file, offset and
// length.
func (im *importer) externalRange(t *Tensor) (string, int64, error) {
	loc := t.External["location"]
	if loc == "" {
		return "", 0, fmt.Errorf("tensor %q: external data without a location", t.Name)
	}
	if filepath.IsAbs(loc) || strings.Contains(filepath.ToSlash(loc), "../") {
		return "", 0, fmt.Errorf("tensor %q: external data location %q must be a path inside the model's directory", t.Name, loc)
	}
	path := filepath.Join(im.dir, loc)
	var off int64
	if s := t.External["offset"]; s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return "", 0, fmt.Errorf("tensor %q: bad external data offset %q", t.Name, s)
		}
		off = v
	}
	want := t.NumElements() * int64(storageBytes(t.DataType))
	if s := t.External["length"]; s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v != want {
			return "", 0, fmt.Errorf("tensor %q: external data length %q, want %d bytes", t.Name, s, want)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", 0, fmt.Errorf("tensor %q: external data: %w", t.Name, err)
	}
	if off+want > st.Size() {
		return "", 0, fmt.Errorf("tensor %q: external data %s holds %d bytes, need %d from offset %d", t.Name, loc, st.Size(), want, off)
	}
	return path, off, nil
}

// tensorBytes passes the little-endian bytes of t, converted to its graph
// element type, to emit in chunks.
func (im *importer) tensorBytes(t *Tensor, emit func([]byte) error) error {
	if t.IsExternal() {
		path, off, err := im.externalRange(t)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		left := t.NumElements() * int64(storageBytes(t.DataType))
		sz := int64(storageBytes(t.DataType))
		chunk := make([]byte, (1<<20)/sz*sz)
		for left > 0 {
			n := min(left, int64(len(chunk)))
			if _, err := f.ReadAt(chunk[:n], off); err != nil {
				return fmt.Errorf("tensor %q: reading external data: %w", t.Name, err)
			}
			if err := emitConverted(t.DataType, chunk[:n], emit); err != nil {
				return err
			}
			off += n
			left -= n
		}
		return nil
	}
	if t.HasRaw {
		return emitConverted(t.DataType, t.RawData, emit)
	}
	// Typed fields: encode in chunks.
	elem, err := elemType(t.DataType)
	if err != nil {
		return err
	}
	sz := scalarSize(elem)
	n := typedLen(t)
	buf := make([]byte, 0, 1<<16)
	for j := range n {
		f, v := typedElem(t, j)
		buf = appendElem(buf, elem, sz, f, v)
		if len(buf) >= 1<<16-8 {
			if err := emit(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return emit(buf)
}

func scalarSize(elem ir.Type) int {
	switch elem {
	case ir.F64, ir.I64:
		return 8
	case ir.F32, ir.I32:
		return 4
	case ir.F16, ir.BF16:
		return 2
	}
	return 1
}

func appendElem(buf []byte, elem ir.Type, sz int, f float64, v int64) []byte {
	var bits uint64
	if ft, ok := elem.(*ir.FloatType); ok {
		bits = ir.FloatToBits(f, ft)
	} else {
		bits = uint64(v)
	}
	for i := range sz {
		buf = append(buf, byte(bits>>(8*i)))
	}
	return buf
}

// emitConverted passes raw data of ONNX type dt to emit in the storage of
// its graph element type: the same bytes, except narrow and unsigned
// integers, which widen.
func emitConverted(dt int32, raw []byte, emit func([]byte) error) error {
	switch dt {
	case TypeFloat, TypeDouble, TypeFloat16, TypeBFloat16, TypeInt64, TypeInt32, TypeUint64:
		return emit(raw)
	}
	elem, err := elemType(dt)
	if err != nil {
		return err
	}
	sz := scalarSize(elem)
	n := len(raw) / storageBytes(dt)
	buf := make([]byte, 0, 1<<16)
	for j := range n {
		f, v := rawElem(dt, raw, j)
		buf = appendElem(buf, elem, sz, f, v)
		if len(buf) >= 1<<16-8 {
			if err := emit(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return emit(buf)
}

// value materializes x as an IR value.
func (im *importer) value(x *val, loc ir.Location) (*ir.Value, error) {
	if x.v != nil {
		return x.v, nil
	}
	var attr ir.DenseAttr
	switch {
	case x.k != nil:
		a, ok := x.k.attr()
		if !ok {
			return nil, fmt.Errorf("a shape value with symbolic sizes %v is used as tensor data, which is not supported", x.k.i)
		}
		attr = a
	case x.w != nil:
		t := ir.TensorOf(slices.Clone(x.w.Dims), x.elem)
		if im.opts.placeholders && x.elem != ir.I1 { // i1 hex packs bits: print those in full
			attr = ir.DenseAttr{Type: t, Bits: []uint64{0}, Splat: true}
			v, err := graph.Build(im.b, "constant", loc, nil, ir.Dict(ir.NamedAttr{Name: "value", Value: attr}))
			if err != nil {
				return nil, err
			}
			v.DefiningOp().SetAttr(weightAttr, ir.Int(int64(len(im.weights)), ir.I64))
			im.weights = append(im.weights, x.w)
			x.v = v
			return v, nil
		}
		bits := make([]uint64, 0, x.w.NumElements())
		sz := scalarSize(x.elem)
		err := im.tensorBytes(x.w, func(b []byte) error {
			for j := 0; j+sz <= len(b); j += sz {
				var u uint64
				for i := range sz {
					u |= uint64(b[j+i]) << (8 * i)
				}
				if x.elem == ir.I32 {
					u = uint64(int64(int32(u)))
				}
				bits = append(bits, u)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		attr = ir.DenseAttr{Type: t, Bits: bits}
	default:
		return nil, errors.New("internal error: a value with no definition")
	}
	v, err := graph.Build(im.b, "constant", loc, nil, ir.Dict(ir.NamedAttr{Name: "value", Value: attr}))
	if err != nil {
		return nil, err
	}
	x.v = v
	return v, nil
}

// LiftWeights makes every non-splat graph.constant in the body of the
// function fn a trailing argument of fn, and returns the constants'
// values in argument order: weights bound at load, which backends see as
// buffers rather than literals.
func LiftWeights(fn *ir.Operation) ([]ir.DenseAttr, error) {
	body := funcs.Body(fn)
	if body == nil {
		return nil, errors.New("the function has no body")
	}
	var weights []ir.DenseAttr
	for _, op := range body.Ops() {
		if op.Name() != graph.OpConstant {
			continue
		}
		d, ok := op.Attr("value").(ir.DenseAttr)
		if !ok || d.Splat || len(d.Bits) <= 1 {
			continue
		}
		arg := body.AddArgument(op.Result(0).Type())
		op.Result(0).ReplaceAllUsesWith(arg)
		op.Erase()
		weights = append(weights, d)
	}
	return weights, funcs.UpdateType(fn)
}

// DimsFor returns the dim_param sizes that graph inputs of the given
// shapes (in graph-input order, initializers excluded) bind, for an
// import specialised to those sizes.
func DimsFor(m *Model, shapes [][]int64) (map[string]int64, error) {
	inits := map[string]bool{}
	for _, t := range m.Graph.Initializers {
		inits[t.Name] = true
	}
	out := map[string]int64{}
	k := 0
	for _, in := range m.Graph.Inputs {
		if inits[in.Name] {
			continue
		}
		if k >= len(shapes) {
			break
		}
		if len(in.Dims) != len(shapes[k]) {
			return nil, fmt.Errorf("input %q has rank %d, got a shape %v", in.Name, len(in.Dims), shapes[k])
		}
		for j, d := range in.Dims {
			if d.Param == "" || d.HasValue {
				continue
			}
			if v, ok := out[d.Param]; ok && v != shapes[k][j] {
				return nil, fmt.Errorf("dim_param %q is %d and %d", d.Param, v, shapes[k][j])
			}
			out[d.Param] = shapes[k][j]
		}
		k++
	}
	return out, nil
}
