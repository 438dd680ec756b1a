package interp

import (
	"errors"
	"fmt"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The loop dialect: buffers (*Buffer values) and structured loops.
//
// loop.alloc fills new buffers with zeros, so a program that reads before it
// writes gets a reproducible answer here (compiled code gives no such
// promise). Loads and stores check every index against its dimension; a
// deallocated buffer cannot be used again. loop.parallel runs its
// iterations sequentially in row-major order of the induction variables,
// folding each iteration's reduced values into the accumulators (which
// start as the inits) with the combiner regions: acc = combine(acc, value).
//
// Loop bodies are resolved once per execution of the loop op (see body), so
// each iteration runs its ops without looking rules up by name.
func init() {
	registerAll(map[string]Rule{
		loop.AllocOp:    allocRule,
		loop.DeallocOp:  deallocRule,
		loop.LoadOp:     loadRule,
		loop.StoreOp:    storeRule,
		loop.DimOp:      dimRule,
		loop.ViewOp:     viewRule,
		loop.ForOp:      forRule,
		loop.ParallelOp: parallelRule,
		loop.IfOp:       ifRule,
		// Terminators pass their operands to the parent's rule.
		loop.YieldOp:  passOperands,
		loop.ReduceOp: passOperands,
	})
}

func passOperands(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) { return args, nil }

// indexValue returns the integer held by a scalar index (or integer) value.
func indexValue(v Value) (int64, error) {
	if t, ok := v.(*Tensor); ok && t.Len() == 1 {
		if s, ok := t.data.([]int64); ok {
			return s[0], nil
		}
		if ir.IsIntOrIndex(t.elem) {
			return t.Int64s()[0], nil
		}
	}
	return 0, fmt.Errorf("expected an index scalar, got %s", v)
}

func indexValues(vs []Value) ([]int64, error) {
	out := make([]int64, len(vs))
	for i, v := range vs {
		var err error
		if out[i], err = indexValue(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func indexScalar(i int64) *Tensor { return &Tensor{elem: ir.Index, data: []int64{i}} }

func bufferArg(v Value) (*Buffer, error) {
	b, ok := v.(*Buffer)
	if !ok {
		return nil, fmt.Errorf("expected a buffer, got %s", v)
	}
	if b.freed {
		return nil, errFreed
	}
	return b, nil
}

func allocRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	m, ok := op.Result(0).Type().(*ir.MemRefType)
	if !ok || !m.Ranked() {
		return nil, fmt.Errorf("result type %s is not a ranked memref", op.Result(0).Type())
	}
	sizes, err := indexValues(args)
	if err != nil {
		return nil, err
	}
	shape := make([]int64, len(m.Shape()))
	for i, d := range m.Shape() {
		if d == ir.Dynamic {
			if len(sizes) == 0 {
				return nil, fmt.Errorf("too few dynamic sizes for %s", m)
			}
			d, sizes = sizes[0], sizes[1:]
			if d < 0 {
				return nil, fmt.Errorf("negative size %d for dimension %d of %s", d, i, m)
			}
		}
		shape[i] = d
	}
	b, err := NewBuffer(m.ElementType(), shape)
	if err != nil {
		return nil, err
	}
	return []Value{b}, nil
}

func deallocRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	b, ok := args[0].(*Buffer)
	if !ok {
		return nil, fmt.Errorf("expected a buffer, got %s", args[0])
	}
	return nil, b.free()
}

// access resolves a buffer operand and its indices to an element position.
func access(args []Value) (*Buffer, int, error) {
	b, err := bufferArg(args[0])
	if err != nil {
		return nil, 0, err
	}
	idx, err := indexValues(args[1:])
	if err != nil {
		return nil, 0, err
	}
	off, err := b.offset(idx)
	return b, off, err
}

func loadRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	b, off, err := access(args)
	if err != nil {
		return nil, err
	}
	return []Value{b.load(off)}, nil
}

func storeRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	b, off, err := access(args[1:])
	if err != nil {
		return nil, err
	}
	v, ok := args[0].(*Tensor)
	if !ok {
		return nil, fmt.Errorf("cannot store %s", args[0])
	}
	return nil, b.store(off, v)
}

func dimRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	b, err := bufferArg(args[0])
	if err != nil {
		return nil, err
	}
	a, _ := op.Attr(loop.IndexAttr).(ir.IntegerAttr)
	if a.Value < 0 || a.Value >= int64(len(b.shape)) {
		return nil, fmt.Errorf("dimension %d is out of range for %s", a.Value, b)
	}
	return []Value{indexScalar(b.shape[a.Value])}, nil
}

// viewRule aliases the operand's elements under the result type's shape;
// its one dynamic dim, if any, takes the rest of the element count.
func viewRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	b, err := bufferArg(args[0])
	if err != nil {
		return nil, err
	}
	m, ok := op.Result(0).Type().(*ir.MemRefType)
	if !ok || !m.Ranked() {
		return nil, fmt.Errorf("result type %s is not a ranked memref", op.Result(0).Type())
	}
	count := int64(1)
	for _, d := range b.shape {
		count *= d
	}
	shape := append([]int64(nil), m.Shape()...)
	static, dyn := int64(1), -1
	for i, d := range shape {
		if d == ir.Dynamic {
			dyn = i
		} else {
			static *= d
		}
	}
	if dyn >= 0 && static != 0 && count%static == 0 {
		shape[dyn] = count / static
	} else if dyn >= 0 && static == 0 && count == 0 {
		shape[dyn] = 0
	}
	if ir.NumElements(shape) != count {
		return nil, fmt.Errorf("cannot view %s as %s: element counts differ", b, m)
	}
	return []Value{&Buffer{elem: b.elem, shape: shape, data: b.data}}, nil
}

// body is a single-block region resolved for repeated execution: its ops
// with their rules, looked up once.
type body struct {
	blk   *ir.Block
	ops   []*ir.Operation
	rules []Rule
}

// resolve prepares the entry block of r (which must hold one) for run.
func (f *Frame) resolve(r *ir.Region) (*body, error) {
	blk := r.Front()
	if blk == nil {
		return nil, ir.Errorf(r.ParentOp().Loc(), "'%s' op has an empty region", r.ParentOp().Name())
	}
	bd := &body{blk: blk}
	for op := blk.First(); op != nil; op = op.Next() {
		rule := f.in.rules[op.Name()]
		if rule == nil {
			return nil, ir.Errorf(op.Loc(), "no interpreter rule for '%s'", op.Name())
		}
		bd.ops, bd.rules = append(bd.ops, op), append(bd.rules, rule)
	}
	return bd, nil
}

// run executes the block with args bound to its arguments and returns the
// values its terminator passes on.
func (bd *body) run(f *Frame, args []Value) ([]Value, error) {
	if err := f.bindBlockArgs(bd.blk, args); err != nil {
		return nil, err
	}
	for i, op := range bd.ops {
		if err := f.count(op); err != nil {
			return nil, err
		}
		operands := make([]Value, op.NumOperands())
		for j, v := range op.Operands() {
			if operands[j] = f.values[v]; operands[j] == nil {
				return nil, ir.Errorf(op.Loc(), "'%s' op operand %d is used before it is computed", op.Name(), j)
			}
		}
		results, err := bd.rules[i](f, op, operands)
		if err != nil {
			var d *ir.Diagnostic
			if errors.As(err, &d) {
				return nil, err
			}
			return nil, ir.Errorf(op.Loc(), "'%s' op %v", op.Name(), err)
		}
		if isTerminator(op) {
			return results, nil
		}
		if len(results) != op.NumResults() {
			return nil, ir.Errorf(op.Loc(), "'%s' op: interpreter rule produced %d values for %d results", op.Name(), len(results), op.NumResults())
		}
		for j, r := range op.Results() {
			f.values[r] = results[j]
		}
	}
	return nil, nil
}

// checkStep rejects a non-positive step, which would never end.
func checkStep(step int64) error {
	if step <= 0 {
		return fmt.Errorf("step must be positive, got %d", step)
	}
	return nil
}

func forRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	bounds, err := indexValues(args[:3])
	if err != nil {
		return nil, err
	}
	lb, ub, step := bounds[0], bounds[1], bounds[2]
	if err := checkStep(step); err != nil {
		return nil, err
	}
	iters := append([]Value(nil), args[3:]...)
	if lb >= ub {
		return iters, nil
	}
	bd, err := f.resolve(op.Region(0))
	if err != nil {
		return nil, err
	}
	blockArgs := make([]Value, 1+len(iters))
	for iv := lb; ; iv += step {
		blockArgs[0] = indexScalar(iv)
		copy(blockArgs[1:], iters)
		next, err := bd.run(f, blockArgs)
		if err != nil {
			return nil, err
		}
		if len(next) != len(iters) {
			return nil, fmt.Errorf("body yielded %d values for %d iter args", len(next), len(iters))
		}
		iters = next
		if next := iv + step; next >= ub || next < iv { // next < iv: overflow
			break
		}
	}
	return iters, nil
}

func parallelRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	n, k, err := loop.Segments(op)
	if err != nil {
		return nil, err
	}
	bounds, err := indexValues(args[:3*n])
	if err != nil {
		return nil, err
	}
	lbs, ubs, steps := bounds[:n], bounds[n:2*n], bounds[2*n:]
	acc := append([]Value(nil), args[3*n:]...)
	for d := range n {
		if err := checkStep(steps[d]); err != nil {
			return nil, err
		}
		if lbs[d] >= ubs[d] {
			return acc, nil // an empty iteration space
		}
	}
	bd, err := f.resolve(op.Region(0))
	if err != nil {
		return nil, err
	}
	var red *ir.Operation
	combiners := make([]*body, k)
	if k > 0 {
		red = bd.blk.Terminator()
		if red == nil || red.Name() != loop.ReduceOp || red.NumRegions() != k {
			return nil, fmt.Errorf("body must end with '%s' with %d regions", loop.ReduceOp, k)
		}
		for i := range combiners {
			if combiners[i], err = f.resolve(red.Region(i)); err != nil {
				return nil, err
			}
		}
	}
	ivs := append([]int64(nil), lbs...)
	blockArgs := make([]Value, n)
	for {
		for d, iv := range ivs {
			blockArgs[d] = indexScalar(iv)
		}
		vals, err := bd.run(f, blockArgs)
		if err != nil {
			return nil, err
		}
		if len(vals) != k {
			return nil, fmt.Errorf("body passed %d values to reduce, want %d", len(vals), k)
		}
		for i, c := range combiners {
			out, err := c.run(f, []Value{acc[i], vals[i]})
			if err != nil {
				return nil, err
			}
			if len(out) != 1 {
				return nil, ir.Errorf(red.Loc(), "'%s' op combiner #%d yielded %d values, want 1", loop.ReduceOp, i, len(out))
			}
			acc[i] = out[0]
		}
		// Advance the innermost induction variable, carrying outwards.
		d := n - 1
		for ; d >= 0; d-- {
			if next := ivs[d] + steps[d]; next < ubs[d] && next > ivs[d] { // next > ivs[d]: no overflow
				ivs[d] = next
				break
			}
			ivs[d] = lbs[d]
		}
		if d < 0 {
			return acc, nil
		}
	}
}

func ifRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	c, ok := args[0].(*Tensor)
	if !ok || c.Len() != 1 || c.elem != ir.I1 {
		return nil, fmt.Errorf("expected an i1 condition, got %s", args[0])
	}
	r := op.Region(1)
	if c.data.([]bool)[0] {
		r = op.Region(0)
	}
	if r.Empty() {
		return nil, nil
	}
	out, err := f.RunRegion(r, nil)
	if err != nil {
		return nil, err
	}
	if len(out) != op.NumResults() {
		return nil, fmt.Errorf("region yielded %d values for %d results", len(out), op.NumResults())
	}
	return out, nil
}
