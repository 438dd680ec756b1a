package onnx

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// einsumTerm is one operand's subscripts: a label per axis, an ellipsis
// expanded to labels '0', '1', … (the broadcast axes, right-aligned).
type einsumTerm []byte

// parseEinsum splits equation into the operands' labels and the output's
// (implicit: the labels seen once, in alphabetical order, after the
// ellipsis axes), expanding "..." for the given operand ranks.
func parseEinsum(eq string, ranks []int) ([]einsumTerm, einsumTerm, error) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	parts := strings.Split(lhs, ",")
	if len(parts) != len(ranks) {
		return nil, nil, fmt.Errorf("equation %q has %d operands, the node %d", eq, len(parts), len(ranks))
	}
	// A dot only ever starts the one "..." of a term.
	malformed := func(p string) bool {
		dots := strings.Count(p, ".")
		return dots != 0 && (dots != 3 || !strings.Contains(p, "..."))
	}
	if explicit && malformed(rhs) {
		return nil, nil, fmt.Errorf("the output's subscripts %q have a malformed ellipsis", rhs)
	}
	ell := 0 // axes the ellipsis stands for: the most any operand has
	for i, p := range parts {
		if malformed(p) {
			return nil, nil, fmt.Errorf("operand %d's subscripts %q have a malformed ellipsis", i, p)
		}
		if strings.Contains(p, "...") {
			ell = max(ell, ranks[i]-(len(p)-3))
		}
	}
	if ell > 10 {
		return nil, nil, errors.New("an ellipsis of more than 10 axes is not supported")
	}
	expand := func(p string, rank int) (einsumTerm, error) {
		var t einsumTerm
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case c == '.':
				n := rank - (len(p) - 3)
				if rank < 0 || n < 0 {
					n = ell
				}
				for k := ell - n; k < ell; k++ {
					t = append(t, byte('0'+k))
				}
				i += 2
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				t = append(t, c)
			default:
				return nil, fmt.Errorf("subscripts %q: %q is not a letter", p, c)
			}
		}
		if rank >= 0 && len(t) != rank {
			return nil, fmt.Errorf("subscripts %q name %d axes of a rank-%d operand", p, len(t), rank)
		}
		return t, nil
	}
	terms := make([]einsumTerm, len(parts))
	count := map[byte]int{}
	for i, p := range parts {
		t, err := expand(p, ranks[i])
		if err != nil {
			return nil, nil, err
		}
		for j, l := range t {
			if slices.Contains(t[:j], l) {
				return nil, nil, fmt.Errorf("operand %d repeats label %q (a diagonal): not supported", i, l)
			}
			count[l]++
		}
		terms[i] = t
	}
	var out einsumTerm
	if explicit {
		t, err := expand(rhs, -1)
		if err != nil {
			return nil, nil, err
		}
		for j, l := range t {
			if count[l] == 0 || slices.Contains(t[:j], l) {
				return nil, nil, fmt.Errorf("output label %q is not an operand's, or repeats", l)
			}
		}
		out = t
	} else {
		for k := range ell {
			out = append(out, byte('0'+k))
		}
		var once []byte
		for l, n := range count {
			if n == 1 && (l < '0' || l > '9') {
				once = append(once, l)
			}
		}
		slices.Sort(once)
		out = append(out, once...)
	}
	return terms, out, nil
}

// convEinsum is Einsum of one or two operands as transposes, sums over
// the labels only one operand has and the output lacks, and one batched
// matmul over [batch, free, contracted] × [batch, contracted, free]; the
// sizes that share a label must agree (broadcasting a label of size 1 is
// not supported).
func convEinsum(c *nodeCtx) ([]*val, error) {
	if len(c.in) < 1 || len(c.in) > 2 {
		return nil, fmt.Errorf("%d operands: one or two are supported", len(c.in))
	}
	var xs []*val
	var ranks []int
	for i := range c.in {
		x, err := c.input(i)
		if err != nil {
			return nil, err
		}
		if !ir.IsFloat(x.elem) {
			return nil, fmt.Errorf("operand %d must be a float tensor, got %s", i, x.elem)
		}
		xs, ranks = append(xs, x), append(ranks, x.rank())
	}
	terms, out, err := parseEinsum(c.str("equation", ""), ranks)
	if err != nil {
		return nil, err
	}
	size := map[byte]sym.Expr{}
	for i, t := range terms {
		for j, l := range t {
			if s, ok := size[l]; ok && !s.Equal(xs[i].dims[j]) {
				return nil, fmt.Errorf("label %q has sizes %s and %s", l, s, xs[i].dims[j])
			}
			size[l] = xs[i].dims[j]
		}
	}
	// Sum each operand over the labels no other term has.
	vals := make([]*val, len(xs))
	for i, t := range terms {
		keep := einsumTerm{}
		var axes []int64
		for j, l := range t {
			if slices.Contains(out, l) || len(terms) == 2 && slices.Contains(terms[1-i], l) {
				keep = append(keep, l)
			} else {
				axes = append(axes, int64(j))
			}
		}
		vals[i] = xs[i]
		if len(axes) > 0 {
			vals[i] = c.im.wrap(c.e.Reduce("reduce_sum", c.value(xs[i]), axes, false))
		}
		terms[i] = keep
	}
	transpose := func(x *val, from, to einsumTerm) *val {
		perm := make([]int64, len(to))
		for k, l := range to {
			perm[k] = int64(slices.Index(from, l))
		}
		if slices.IsSorted(perm) {
			return x
		}
		return c.im.wrap(c.e.Op("transpose", []*ir.Value{c.value(x)}, ir.NamedAttr{Name: "perm", Value: graph.Ints(perm...)}))
	}
	if len(terms) == 1 {
		return c.wrap(c.value(transpose(vals[0], terms[0], out))), c.e.Err
	}
	// Two operands: batch (both, kept), free (one, kept), contracted (both, summed).
	var batch, freeA, freeB, con einsumTerm
	for _, l := range terms[0] {
		switch {
		case slices.Contains(terms[1], l) && slices.Contains(out, l):
			batch = append(batch, l)
		case slices.Contains(terms[1], l):
			con = append(con, l)
		default:
			freeA = append(freeA, l)
		}
	}
	for _, l := range terms[1] {
		if !slices.Contains(terms[0], l) {
			freeB = append(freeB, l)
		}
	}
	dims := func(t einsumTerm) []sym.Expr {
		d := make([]sym.Expr, len(t))
		for k, l := range t {
			d[k] = size[l]
		}
		return d
	}
	prod := func(t einsumTerm) sym.Expr { return sym.Product(dims(t)...) }
	cat := func(ts ...einsumTerm) einsumTerm { return slices.Concat(ts...) }
	a := transpose(vals[0], terms[0], cat(batch, freeA, con))
	b := transpose(vals[1], terms[1], cat(batch, con, freeB))
	av := c.reshapeValue(a, []sym.Expr{prod(batch), prod(freeA), prod(con)})
	bv := c.reshapeValue(b, []sym.Expr{prod(batch), prod(con), prod(freeB)})
	if c.e.Err != nil {
		return nil, c.e.Err
	}
	y := c.e.Op("matmul", []*ir.Value{av, bv})
	if y == nil {
		return nil, c.e.Err
	}
	got := cat(batch, freeA, freeB)
	yv := c.reshapeValue(c.im.wrap(y), dims(got))
	if yv == nil {
		return nil, c.e.Err
	}
	return c.wrap(c.value(transpose(c.im.wrap(yv), got, out))), c.e.Err
}
