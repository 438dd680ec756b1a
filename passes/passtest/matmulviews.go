package passtest

import (
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/ir"
)

// MatmulViewProgram returns a generator of programs @f holding one
// graph.matmul whose operands reach it through the view chains models
// produce: lhs [b…, M, K] as an argument, a reshape of a flat or
// differently shaped argument, the transpose of its last two dims, a
// transpose then a reshape (attention heads merged before a projection),
// a slice, or a permutation undone by a transpose; rhs [K, N] (a weight
// shared by the batch), [1…, K, N] (with one more unit dim than lhs has
// batch dims at most), a reshape or a transposed [N, K]; then
// no epilogue, a bias over the last dim, a relu, or a residual add. The
// element type is one of elems. The function returns the result.
func MatmulViewProgram(elems ...ir.Type) *rapid.Generator[*Program] {
	return rapid.Custom(func(t *rapid.T) *Program {
		elem := rapid.SampledFrom(elems).Draw(t, "elem")
		batch := rapid.SliceOfN(rapid.Int64Range(1, 3), 0, 2).Draw(t, "batch")
		m := rapid.Int64Range(1, 5).Draw(t, "M")
		k := rapid.Int64Range(1, 5).Draw(t, "K")
		n := rapid.Int64Range(1, 5).Draw(t, "N")
		var b viewBuilder
		b.elem = elem.String()
		lhs := b.operand(t, "lhs", append(append([]int64{}, batch...), m, k), true)
		rhsShape := []int64{k, n}
		out := append(append([]int64{}, batch...), m, n)
		// Unit batch dims on rhs, up to one more than lhs has (the
		// product then gains a leading 1).
		if extra := rapid.IntRange(0, len(batch)+1).Draw(t, "rhs unit dims"); extra > 0 {
			rhsShape = append(make([]int64, extra), k, n)
			for i := range extra {
				rhsShape[i] = 1
			}
			for len(out) < len(rhsShape) {
				out = append([]int64{1}, out...)
			}
		}
		rhs := b.operand(t, "rhs", rhsShape, false)
		res := b.op("graph.matmul", []string{lhs, rhs}, "", out)
		// An epilogue over the product's shape: a bias over the last dim,
		// an activation, a residual of the full shape.
		switch rapid.SampledFrom([]string{"none", "bias", "relu", "residual"}).Draw(t, "epilogue") {
		case "bias":
			res = b.op("graph.add", []string{res, b.arg([]int64{n})}, "", out)
		case "relu":
			res = b.op("graph.relu", []string{res}, "", out)
		case "residual":
			res = b.op("graph.add", []string{b.arg(out), res}, "", out)
		}
		var src strings.Builder
		fmt.Fprintf(&src, "func.func @f(%s) -> %s {\n", strings.Join(b.args, ", "), b.typ(out))
		src.WriteString(b.body.String())
		fmt.Fprintf(&src, "  func.return %s : %s\n}\n", res, b.typ(out))
		return &Program{Source: src.String(), Func: "f"}
	})
}

// viewBuilder writes a function's arguments and body as text.
type viewBuilder struct {
	elem  string
	args  []string
	types map[string][]int64
	body  strings.Builder
	next  int
}

func (b *viewBuilder) typ(shape []int64) string {
	var s strings.Builder
	s.WriteString("tensor<")
	for _, d := range shape {
		fmt.Fprintf(&s, "%dx", d)
	}
	return s.String() + b.elem + ">"
}

func (b *viewBuilder) arg(shape []int64) string {
	name := fmt.Sprintf("%%a%d", len(b.args))
	b.args = append(b.args, name+": "+b.typ(shape))
	if b.types == nil {
		b.types = map[string][]int64{}
	}
	b.types[name] = shape
	return name
}

// op appends `%vN = name(operands) props` of result shape out.
func (b *viewBuilder) op(name string, operands []string, props string, out []int64) string {
	res := fmt.Sprintf("%%v%d", b.next)
	b.next++
	var in []string
	for _, o := range operands {
		in = append(in, b.typ(b.types[o]))
	}
	if props != "" {
		props = " <{" + props + "}>"
	}
	fmt.Fprintf(&b.body, "  %s = \"%s\"(%s)%s : (%s) -> %s\n", res, name, strings.Join(operands, ", "), props, strings.Join(in, ", "), b.typ(out))
	b.types[res] = out
	return res
}

func ints(vs []int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func count(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// operand draws how a value of shape reaches the matmul.
func (b *viewBuilder) operand(t *rapid.T, label string, shape []int64, lhs bool) string {
	r := len(shape)
	swapped := append(append([]int64{}, shape[:r-2]...), shape[r-1], shape[r-2])
	lastTwo := make([]int64, r)
	for i := range r {
		lastTwo[i] = int64(i)
	}
	lastTwo[r-2], lastTwo[r-1] = int64(r-1), int64(r-2)
	forms := []string{"plain", "reshape", "transpose-last-two", "transpose-reshape", "slice", "permuted"}
	switch rapid.SampledFrom(forms).Draw(t, label+" form") {
	case "reshape":
		// From a flat argument, or from one with the rows split in two.
		from := []int64{count(shape)}
		if rapid.Bool().Draw(t, label+" split") {
			from = append([]int64{count(shape[:r-1])}, shape[r-1])
		}
		return b.op("graph.reshape", []string{b.arg(from)}, "shape = "+ints(shape), shape)
	case "transpose-last-two":
		return b.op("graph.transpose", []string{b.arg(swapped)}, "perm = "+ints(lastTwo), shape)
	case "transpose-reshape":
		// [x, y, z] transposed to [y, x, z] and reshaped to shape: as
		// attention heads [B, H, T, dh] → [B, T, H, dh] → [B·T, H·dh].
		if !lhs {
			break
		}
		last := shape[r-1]
		x := int64(1)
		for _, d := range []int64{3, 2} {
			if last%d == 0 && last > 1 {
				x = d
				break
			}
		}
		rows := count(shape[:r-1])
		from := b.arg([]int64{x, rows, last / x})
		tr := b.op("graph.transpose", []string{from}, "perm = [1, 0, 2]", []int64{rows, x, last / x})
		return b.op("graph.reshape", []string{tr}, "shape = "+ints(shape), shape)
	case "slice":
		big := append([]int64{}, shape...)
		big[r-1] += 2
		starts := make([]int64, r)
		starts[r-1] = 1
		ends := append([]int64{}, big...)
		ends[r-1]--
		return b.op("graph.slice", []string{b.arg(big)}, "starts = "+ints(starts)+", limits = "+ints(ends), shape)
	case "permuted":
		perm := rapid.Permutation(lastTwo).Draw(t, label+" perm")
		from := make([]int64, r)
		for i, p := range perm {
			from[p] = shape[i]
		}
		return b.op("graph.transpose", []string{b.arg(from)}, "perm = "+ints(perm), shape)
	}
	return b.arg(shape)
}
