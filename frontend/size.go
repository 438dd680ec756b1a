package frontend

import (
	"slices"
	"strconv"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
)

// This file is sizes in user code (as Dynamo's SymInt). In a graph with
// dynamic dims, a size is either static or symbolic (a "?" of the graph's
// types, which graph-symbolize-shapes names s0, s1, …). Reading a
// symbolic size as a Go int (Shape, Dim, Size.Int) specializes the graph
// on its input sizes, with a log line under STRATA_LOGS=guards naming the
// read; a Size keeps it symbolic through arithmetic and into ReshapeS and
// Flatten, so a function whose sequence length varies compiles once.

// Size is a dim's size as Size(i) reads it: its value at this call and
// whether the graph keeps it symbolic. The zero Size is static 0.
type Size struct {
	n   int
	sym bool
	src *Tensor // a tensor whose symbolic dim this size came from
	dim int
}

// Sz returns the static size n.
func Sz(n int) Size { return Size{n: n} }

// Symbolic reports whether s is symbolic in the graph being recorded.
func (s Size) Symbolic() bool { return s.sym }

// Int returns s as a Go int. A symbolic size used by Go code (a loop
// bound, an if, an allocation) specializes the graph on its input sizes,
// with a log line naming the call.
func (s Size) Int() int {
	if s.sym && s.src != nil {
		s.src.specializeAt(callerLoc(), s.dim)
	}
	return s.n
}

// Mul returns s·o (symbolic if either is).
func (s Size) Mul(o Size) Size { return s.combine(o, s.n*o.n) }

// Add returns s+o (symbolic if either is).
func (s Size) Add(o Size) Size { return s.combine(o, s.n+o.n) }

// MulInt returns s·k.
func (s Size) MulInt(k int) Size { s.n *= k; return s }

// DivInt returns s/k (rounding toward zero; a reshape with it checks that
// it divides).
func (s Size) DivInt(k int) Size {
	if k != 0 {
		s.n /= k
	}
	return s
}

func (s Size) combine(o Size, n int) Size {
	out := s
	if !s.sym {
		out = o
	}
	out.n = n
	return out
}

// String prints the value, with a "?" when it is symbolic.
func (s Size) String() string {
	if s.sym {
		return "?" + itoa(s.n)
	}
	return itoa(s.n)
}

func itoa(n int) string { return strconv.Itoa(n) }

// symShape returns t's sizes in the graph being recorded or replayed,
// ir.Dynamic for a symbolic one, or nil when t belongs to no dynamic
// graph (every size is then static).
func (t *Tensor) symShape() []int64 {
	if t.g != nil {
		if !t.g.dynamic || t.node == nil {
			return nil
		}
		if tt, ok := t.node.Type().(*ir.TensorType); ok {
			return tt.Shape()
		}
		return nil
	}
	if id, ok := t.replayID(); ok {
		if rp := t.sess.rp; rp.tp.dynamic {
			return rp.shapes[id]
		}
		return nil
	}
	s := t.in.Load()
	if s == nil || !s.active {
		return nil
	}
	if rp := s.rp; rp != nil {
		if id, ok := rp.c.rpLifted[t]; ok && rp.tp.dynamic {
			return rp.shapes[id]
		}
		return nil
	}
	if g := s.cur; g != nil && g.dynamic {
		if l, ok := g.lifted[t]; ok && l.ver == t.ver {
			if tt, ok := l.v.Type().(*ir.TensorType); ok {
				return tt.Shape()
			}
		}
	}
	return nil
}

// symbolicDim reports whether dim d of t is symbolic.
func (t *Tensor) symbolicDim(d int) bool {
	ss := t.symShape()
	return d >= 0 && d < len(ss) && ss[d] == ir.Dynamic
}

// specializeAt specializes t's graph because code read dim d's size.
func (t *Tensor) specializeAt(loc ir.Location, d int) {
	logs.Printf(topicGuards, "%s: size %d of dim %d used as a Go value", locString(loc), t.shape[d], d)
	t.shapeRead()
}

func normDim(d, rank int) (int, bool) {
	if d < 0 {
		d += rank
	}
	return d, d >= 0 && d < rank
}

// Dim returns the size of dim d (negative counts from the end) as a Go
// int. A symbolic size specializes the graph (see Size); a static one
// does not. An out-of-range d gives 0 and sets t's error.
func (t *Tensor) Dim(d int) int {
	i, ok := normDim(d, len(t.shape))
	if !ok {
		if t.err == nil {
			t.err = located(callerLoc(), "Dim: dim %d out of range for shape %v", d, t.shape)
		}
		return 0
	}
	if t.symbolicDim(i) {
		t.specializeAt(callerLoc(), i)
	}
	return int(t.shape[i])
}

// Size returns the size of dim d (negative counts from the end) without
// specializing the graph: a symbolic size stays symbolic in ReshapeS and
// Flatten.
func (t *Tensor) Size(d int) Size {
	i, ok := normDim(d, len(t.shape))
	if !ok {
		if t.err == nil {
			t.err = located(callerLoc(), "Size: dim %d out of range for shape %v", d, t.shape)
		}
		return Size{}
	}
	return Size{n: int(t.shape[i]), sym: t.symbolicDim(i), src: t, dim: i}
}

// Sizes returns Size of every dim.
func (t *Tensor) Sizes() []Size {
	out := make([]Size, len(t.shape))
	for i := range out {
		out[i] = t.Size(i)
	}
	return out
}

// ReshapeS is Reshape to sizes that may be symbolic: one symbolic size
// is recorded as the -1 that graph.reshape infers from the element count,
// so the graph stays dynamic. Two or more cannot be said with
// graph.reshape's static 'shape' attribute: they specialize the graph,
// with a log line.
func (t *Tensor) ReshapeS(sizes ...Size) *Tensor {
	shape := make([]int, len(sizes))
	syms := 0
	for i, s := range sizes {
		shape[i] = s.n
		if s.sym {
			syms++
		}
	}
	if syms == 1 {
		for i, s := range sizes {
			if s.sym {
				shape[i] = -1
			}
		}
	} else if syms > 1 {
		loc := callerLoc()
		for _, s := range sizes {
			if s.sym && s.src != nil {
				logs.Printf(topicGuards, "%s: reshape to %d symbolic sizes (graph.reshape infers one)", locString(loc), syms)
				s.src.specializeAt(loc, s.dim)
				break
			}
		}
	}
	return apply(nil, op("reshape", attr("shape", ints(shape))), t)
}

// Flatten merges dims start..end (inclusive; negative counts from the
// end) into one, keeping the graph dynamic where ReshapeS can.
func (t *Tensor) Flatten(start, end int) *Tensor {
	r := len(t.shape)
	s, ok1 := normDim(start, r)
	e, ok2 := normDim(end, r)
	if !ok1 || !ok2 || s > e {
		return failed(located(callerLoc(), "Flatten: dims %d..%d out of range for shape %v", start, end, t.shape))
	}
	sizes := t.Sizes()
	merged := Sz(1)
	for _, z := range sizes[s : e+1] {
		merged = merged.Mul(z)
	}
	out := slices.Concat(sizes[:s], []Size{merged}, sizes[e+1:])
	return t.ReshapeS(out...)
}

// Arange returns the Int64 tensor [0, 1, …, n-1] (a concrete tensor; in a
// compiled function an input of the graph).
func Arange(n int) *Tensor {
	if n < 0 {
		return failed(located(callerLoc(), "Arange: negative size %d", n))
	}
	is := make([]int64, n)
	for i := range is {
		is[i] = int64(i)
	}
	return FromSlice(is)
}

// ArangeS is Arange of a Size. graph.iota has a static size, so a
// symbolic n specializes the graph (with a log line); pass positions as
// an argument to keep them dynamic.
func ArangeS(n Size) *Tensor {
	if n.sym && n.src != nil {
		n.src.specializeAt(callerLoc(), n.dim)
	}
	return Arange(n.n)
}
