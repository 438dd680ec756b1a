package graph

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// Symbolic sizes (DESIGN §6). A dim whose size is a symbolic expression
// prints "?" in the type and the expression in a #graph.dims encoding:
//
//	tensor<?x4096xf32, #graph.dims<[s0, 4096]>>
//
// The encoding lists every dim: static sizes as integers, unknown sizes as
// "?". The IR keeps it as an opaque attribute (mlir-opt reads it the same
// way); this file parses it, caching by text.

// dimsPrefix opens the text of a dims encoding.
const dimsPrefix = "#" + Name + ".dims<["

// unknownPrefix starts the names of the fresh symbols that stand for "?"
// sizes no encoding names. They never reach printed IR: a size mentioning
// one prints as "?".
const unknownPrefix = "?"

var unknownCount atomic.Int64

// freshUnknown returns a new symbol for a size nothing is known about.
func freshUnknown() sym.Expr {
	return sym.Sym(unknownPrefix + strconv.FormatInt(unknownCount.Add(1), 10))
}

func isUnknownName(n string) bool { return strings.HasPrefix(n, unknownPrefix) }

// IsUnknown reports whether a size depends on a "?" that no symbol names.
func IsUnknown(e sym.Expr) bool { return e.Has(isUnknownName) }

// parsedDims caches parsed encodings by text; nil entries are "?".
var parsedDims sync.Map // string → []*sym.Expr

// DimsOf returns the sizes of a ranked tensor type: static sizes as
// constants, "?" sizes as their symbolic expressions from the #graph.dims
// encoding, or as fresh unknowns when the type has none (or it is
// malformed or of the wrong rank).
func DimsOf(t *ir.TensorType) []sym.Expr {
	shape := t.Shape()
	enc, _ := encodedDims(t)
	out := make([]sym.Expr, len(shape))
	for i, d := range shape {
		switch {
		case d != ir.Dynamic:
			out[i] = sym.Const(d)
		case len(enc) == len(shape) && enc[i] != nil:
			out[i] = *enc[i]
		default:
			out[i] = freshUnknown()
		}
	}
	return out
}

// encodedDims parses t's #graph.dims encoding (nil, nil when it has none).
func encodedDims(t *ir.TensorType) ([]*sym.Expr, error) {
	o, ok := t.Encoding.(ir.OpaqueAttr)
	if !ok || !strings.HasPrefix(o.Text, dimsPrefix) {
		return nil, nil
	}
	if v, ok := parsedDims.Load(o.Text); ok {
		return v.([]*sym.Expr), nil
	}
	dims, err := ParseDims(o.Text)
	if err != nil {
		return nil, err
	}
	parsedDims.Store(o.Text, dims)
	return dims, nil
}

// CheckDims reports a malformed #graph.dims encoding of t: text that does
// not parse, an entry count other than t's rank, or an entry that differs
// from a static size. DimsOf ignores such an encoding, so the verifier of
// every graph op rejects it on its operands and results.
func CheckDims(t *ir.TensorType) error {
	dims, err := encodedDims(t)
	if err != nil || dims == nil {
		return err
	}
	shape := t.Shape()
	if len(dims) != len(shape) {
		return fmt.Errorf("%s has %d sizes for a tensor of rank %d", sym.Clip(t.Encoding.String()), len(dims), len(shape))
	}
	for i, d := range shape {
		if d == ir.Dynamic || dims[i] == nil {
			continue
		}
		if c, ok := dims[i].IsConst(); !ok || c != d {
			return fmt.Errorf("%s gives dim %d the size %s, but the type's is %d", sym.Clip(t.Encoding.String()), i, sym.Clip(dims[i].String()), d)
		}
	}
	return nil
}

// ParseDims parses the text of a #graph.dims<[…]> encoding; "?" entries
// come back nil.
func ParseDims(text string) ([]*sym.Expr, error) {
	body, ok := strings.CutPrefix(text, dimsPrefix)
	if ok {
		body, ok = strings.CutSuffix(body, "]>")
	}
	if !ok {
		return nil, fmt.Errorf("%q is not a %s…]> encoding", text, dimsPrefix)
	}
	var out []*sym.Expr
	for _, part := range splitTop(body) {
		part = strings.TrimSpace(part)
		if part == "?" {
			out = append(out, nil)
			continue
		}
		e, err := sym.Parse(part)
		if err != nil {
			return nil, fmt.Errorf("in %s: %w", sym.Clip(text), err)
		}
		if c, ok := e.IsConst(); ok && c < 0 {
			return nil, fmt.Errorf("in %s: size %d is negative", sym.Clip(text), c)
		}
		out = append(out, &e)
	}
	return out, nil
}

// splitTop splits s at commas outside parentheses.
func splitTop(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var parts []string
	depth, start := 0, 0
	for i := range len(s) {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// DimsEncoding returns the #graph.dims encoding of dims, or nil when it
// would say nothing the shape does not (every size static or unknown).
func DimsEncoding(dims []sym.Expr) ir.Attribute {
	parts := make([]string, len(dims))
	symbolic := false
	for i, d := range dims {
		c, isConst := d.IsConst()
		switch {
		case isConst:
			parts[i] = strconv.FormatInt(c, 10)
		case IsUnknown(d):
			parts[i] = "?"
		default:
			parts[i] = d.String()
			symbolic = true
		}
	}
	if !symbolic {
		return nil
	}
	return ir.OpaqueAttr{Text: dimsPrefix + strings.Join(parts, ", ") + "]>"}
}

// TensorWithDims returns the tensor type of the given sizes: constant
// sizes are static, the others "?", with a #graph.dims encoding naming
// the symbolic ones (none when every size is static or unknown).
func TensorWithDims(dims []sym.Expr, elem ir.Type) *ir.TensorType {
	shape := make([]int64, len(dims))
	for i, d := range dims {
		shape[i] = ir.Dynamic
		if c, ok := d.IsConst(); ok && c >= 0 {
			shape[i] = c
		}
	}
	return ir.TensorWithEncoding(shape, elem, DimsEncoding(dims))
}

// dimsFromShape returns constants for static sizes and fresh unknowns for
// "?" (attribute shapes, which hold no symbols).
func dimsFromShape(shape []int64) []sym.Expr {
	out := make([]sym.Expr, len(shape))
	for i, d := range shape {
		if d == ir.Dynamic {
			out[i] = freshUnknown()
		} else {
			out[i] = sym.Const(d)
		}
	}
	return out
}

// CheckShapes checks concrete shapes against the symbolic sizes of the
// tensor types they are values of (an argument list against a function's
// inputs, say): a symbol that sizes several dims must have one value, and
// a size that is an expression of bound symbols must equal it. shapes[i]
// is nil where types[i] is not a ranked tensor; static sizes and ranks are
// the caller's to check. It returns the symbols' values.
func CheckShapes(types []ir.Type, shapes [][]int64) (map[string]int64, error) {
	env := map[string]int64{}
	from := map[string]string{}
	type later struct {
		i, d int
		e    sym.Expr
	}
	var exprs []later
	for i, t := range types {
		tt, ok := t.(*ir.TensorType)
		if !ok || shapes[i] == nil || !tt.Ranked() || len(shapes[i]) != len(tt.Shape()) {
			continue
		}
		for d, e := range DimsOf(tt) {
			if _, isConst := e.IsConst(); isConst || IsUnknown(e) {
				continue
			}
			name, isSym := e.IsSym()
			if !isSym {
				exprs = append(exprs, later{i, d, e})
				continue
			}
			got := shapes[i][d]
			if v, bound := env[name]; bound && v != got {
				return nil, fmt.Errorf("argument %d of type %s has size %d in dim %d, but %s = %d (%s)", i, t, got, d, name, v, from[name])
			}
			env[name] = got
			from[name] = fmt.Sprintf("argument %d, dim %d", i, d)
		}
	}
	for _, l := range exprs {
		want, err := l.e.Eval(env)
		if err != nil {
			continue // a symbol no dim names alone: nothing to check against
		}
		if got := shapes[l.i][l.d]; got != want {
			return nil, fmt.Errorf("argument %d of type %s has size %d in dim %d, but %s = %d", l.i, types[l.i], got, l.d, l.e, want)
		}
	}
	return env, nil
}
