package lower

import (
	"encoding/binary"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// A kernel builds the one loop.parallel nest of a fusion (or of a copy).
//
// Elements are computed on demand: value(v, idx) emits the scalar code of
// tensor v at the multi-index idx by walking v's defining ops, so views are
// index remapping and pointwise chains are straight-line code. Each emitted
// value lives at a nesting level (0 is the parallel body; loop.for and
// loop.if bodies add one), the deepest level among its operands, and is
// inserted in that scope, before the loop that is being built there: a row
// maximum needed inside a write loop is computed once per row, before the
// write loop. Results are memoized per (value, indices).
type kernel struct {
	c      *converter
	fusion *ir.Operation // nil for a copy
	body   *ir.Block     // the fusion's body
	loc    ir.Location
	par    *ir.Operation // the loop.parallel, once made
	scopes []*scope
	memo   []map[memoKey]*ir.Value // stack: loop.if regions push an overlay
	level  map[*ir.Value]int
	ids    map[*ir.Value]uint64
	floor  int         // lowest level values may be placed at (inside loop.if regions)
	at     *ir.Builder // for single ops placed by emit, store and constant
	conv   *loop.Conv  // the geometry to record on a tensor-core conv2d nest
	// outViews are views of the output buffers in the iteration space's
	// shape, stored through instead of the buffers (matmulSpace), or nil.
	outViews []*ir.Value
}

// A memoKey names a scalar the kernel has emitted: an op (tag is its name,
// aux its predicate, typ its target type) on operands, the element of a
// tensor value at an index (tag "value"), a load, or a constant (aux holds
// its bits). A struct key costs no allocation per lookup, unlike a string;
// values past the fourth, which only indices of rank 4 and up need, are
// spilled into more as value ids.
type memoKey struct {
	tag  string
	aux  uint64
	typ  ir.Type
	vs   [4]*ir.Value
	more string
}

type scope struct {
	blk  *ir.Block
	open *ir.Operation // the loop or if being built in blk, if any
}

// newKernel starts a kernel. Kernels are built one at a time, so they share
// the converter's memo and level maps, which keep their capacity from one
// kernel to the next.
func newKernel(c *converter, f *ir.Operation, loc ir.Location) *kernel {
	if c.memo == nil {
		c.memo, c.level = map[memoKey]*ir.Value{}, map[*ir.Value]int{}
	}
	clear(c.memo)
	clear(c.level)
	k := &kernel{c: c, fusion: f, loc: loc, memo: []map[memoKey]*ir.Value{c.memo},
		level: c.level, at: ir.NewBuilder(c.ctx)}
	if f != nil {
		k.body = f.Region(0).Front()
	}
	return k
}

// outer returns a builder for function-level values of the kernel (sizes,
// allocations): before the nest once it exists.
func (k *kernel) outer() *ir.Builder {
	if k.par != nil {
		b := ir.NewBuilder(k.c.ctx)
		b.SetInsertionPointBefore(k.par)
		return b
	}
	return k.c.at
}

func shapeOf(v *ir.Value) []int64 {
	switch t := v.Type().(type) {
	case *ir.TensorType:
		return t.Shape()
	case *ir.MemRefType:
		return t.Shape()
	}
	return nil
}

func elemOf(v *ir.Value) ir.Type { return ir.ElementTypeOf(v.Type()) }

// build allocates a buffer per value of outs and emits the nest computing
// them; kind is the fusion kind.
func (k *kernel) build(outs []*ir.Value, kind string) ([]*ir.Value, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	// The iteration space: the kept dims of the group's reduction, or the
	// first output.
	full := shapeOf(outs[0])
	space, fullSpace := full, full
	var axes []int
	if kind == "reduction" || kind == "persistent_row" {
		if red := k.firstReduction(); red != nil {
			fullSpace = shapeOf(red.Operand(0))
			axes = reductionAxes(red, len(fullSpace))
			space = nil
			for d, n := range fullSpace {
				if !slices.Contains(axes, d) {
					space = append(space, n)
				}
			}
		}
	}
	var ms []int64
	if kind == "matmul" {
		if ms = k.matmulSpace(outs); ms != nil {
			space, fullSpace = ms, ms
		}
	}
	bufs := make([]*ir.Value, len(outs))
	for i, o := range outs {
		tt, ok := o.Type().(*ir.TensorType)
		if !ok || !tt.Ranked() {
			return nil, errorf(k.loc, "result %d is not a ranked tensor", i)
		}
		var dyn []*ir.Value
		for d, n := range tt.Shape() {
			if n == ir.Dynamic {
				s, err := k.size(o, d)
				if err != nil {
					return nil, err
				}
				dyn = append(dyn, s)
			}
		}
		bufs[i] = loopAlloc(k.c.at, k.loc, bufferType(tt).(*ir.MemRefType), dyn)
	}
	if !slices.ContainsFunc(outs, func(o *ir.Value) bool { return !slices.Contains(shapeOf(o), 0) }) {
		// Every output is empty (a static size of 0): there is nothing to
		// compute and no nest, so no launch with no work once on a GPU.
		return bufs, nil
	}
	if ms != nil {
		k.outViews = k.outputViews(bufs, ms)
	}
	var inSpace, inFull []int
	for i, o := range outs {
		switch {
		case sameSpace(shapeOf(o), space):
			inSpace = append(inSpace, i)
		case sameSpace(shapeOf(o), fullSpace):
			inFull = append(inFull, i)
		default:
			return nil, errorf(k.loc, "result %d (%s) is neither in the iteration space %v nor in %v", i, o.Type(), space, fullSpace)
		}
	}
	var conv *ir.Operation
	block := int64(1)
	if kind == "conv2d" {
		conv, block = k.convBlock(outs)
	}
	ubs := make([]*ir.Value, 0, len(space))
	for d := range space {
		if d == 1 && block > 1 {
			// Each point computes block output channels (convBlock).
			ubs = append(ubs, arith.ConstantIndex(k.c.at, k.loc, space[1]/block))
			continue
		}
		s, err := k.spaceSize(outs, space, d)
		if err != nil {
			return nil, err
		}
		ubs = append(ubs, s)
	}
	rank0 := len(space) == 0
	if rank0 {
		ubs = []*ir.Value{arith.ConstantIndex(k.c.at, k.loc, 1)}
	}
	lbs, steps := make([]*ir.Value, len(ubs)), make([]*ir.Value, len(ubs))
	zero, one := arith.ConstantIndex(k.c.at, k.loc, 0), arith.ConstantIndex(k.c.at, k.loc, 1)
	for i := range ubs {
		lbs[i], steps[i] = zero, one
	}
	var err error
	loop.Parallel(k.c.at, k.loc, lbs, ubs, steps, nil, func(b *ir.Builder, ivs []*ir.Value) []*ir.Value {
		blk := b.InsertionBlock()
		k.par = blk.ParentOp()
		k.scopes = []*scope{{blk: blk}}
		idx := ivs
		if rank0 {
			idx = nil
		}
		if block > 1 {
			err = k.writeConvBlock(conv, block, outs, bufs, idx)
		} else {
			err = k.writeOutputs(outs, bufs, inSpace, inFull, space, fullSpace, axes, idx)
		}
		return nil
	})
	if k.par != nil && kind != "" {
		// What the nest is, for the passes after (loop.NestKind): the
		// fusion's kind, so that convert-loop-to-gpu reads it rather than
		// re-recognizing it from the nest's shape.
		k.par.SetAttr(loop.NestKindAttr, ir.Str(kind))
		if k.conv != nil {
			loop.SetConv(k.par, *k.conv)
		}
	}
	k.c.kernels++
	return bufs, err
}

// writeOutputs stores the outputs: those over the iteration space once per
// iteration, those over the full (unreduced) space in a loop nest over the
// reduced dims.
func (k *kernel) writeOutputs(outs, bufs []*ir.Value, inSpace, inFull []int, space, fullSpace []int64, axes []int, idx []*ir.Value) error {
	for _, i := range inSpace {
		oi, err := k.remap(space, idx, shapeOf(outs[i]))
		if err != nil {
			return err
		}
		if i < len(k.outViews) && k.outViews[i] != nil {
			// Stored through the view in the space's shape (matmulSpace).
			v, err := k.value(outs[i], oi)
			if err != nil {
				return err
			}
			loop.Store(k.place(len(k.scopes)-1), k.loc, v, k.outViews[i], idx...)
			continue
		}
		if err := k.store(outs[i], oi, bufs[i]); err != nil {
			return err
		}
	}
	if len(inFull) == 0 {
		return nil
	}
	ubs := make([]*ir.Value, len(axes))
	for j, a := range axes {
		s, err := k.dimOf(fullSpace, a, outs[inFull[0]])
		if err != nil {
			return err
		}
		ubs[j] = s
	}
	_, err := k.loops(0, ubs, nil, func(ivs, _ []*ir.Value) ([]*ir.Value, error) {
		fi := expand(len(fullSpace), axes, idx, ivs)
		for _, i := range inFull {
			oi, err := k.remap(fullSpace, fi, shapeOf(outs[i]))
			if err != nil {
				return nil, err
			}
			if err := k.store(outs[i], oi, bufs[i]); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	return err
}

// dimOf returns the size of dim d of a space: a constant, or the dynamic
// size read from v, which spans that space.
func (k *kernel) dimOf(space []int64, d int, v *ir.Value) (*ir.Value, error) {
	if space[d] != ir.Dynamic {
		return k.index(space[d]), nil
	}
	if len(shapeOf(v)) != len(space) {
		return nil, errorf(k.loc, "dynamic size of dim %d of the iteration space is not known", d)
	}
	return k.size(v, d)
}

// spaceSize is the size of dim d of the iteration space, at function level.
func (k *kernel) spaceSize(outs []*ir.Value, space []int64, d int) (*ir.Value, error) {
	if space[d] != ir.Dynamic {
		return arith.ConstantIndex(k.c.at, k.loc, space[d]), nil
	}
	if red := k.firstReduction(); red != nil {
		x := red.Operand(0)
		axes := reductionAxes(red, len(shapeOf(x)))
		j := 0
		for xd := range shapeOf(x) {
			if slices.Contains(axes, xd) {
				continue
			}
			if j == d {
				return k.size(x, xd)
			}
			j++
		}
	}
	for _, o := range outs {
		if len(shapeOf(o)) == len(space) {
			return k.size(o, d)
		}
	}
	return nil, errorf(k.loc, "dynamic size of dim %d of the iteration space is not known", d)
}

func (k *kernel) firstReduction() *ir.Operation {
	if k.body == nil {
		return nil
	}
	for op := range k.body.All() {
		if isReduction(op) {
			return op
		}
	}
	return nil
}

func isReduction(op *ir.Operation) bool {
	return graph.ClassOf(op.Name()) == graph.ClassReduction
}

// reductionAxes are the normalized, sorted reduced axes of a reduction or
// argmax over an input of the given rank.
func reductionAxes(op *ir.Operation, rank int) []int {
	var vs []int64
	if op.Name() == graph.OpArgmax {
		vs = []int64{graph.Axis(op)}
	} else if a, ok := graph.IntList(op.Attr("axes")); ok {
		vs = a
	} else {
		for d := range rank {
			vs = append(vs, int64(d))
		}
	}
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		if v < 0 {
			v += int64(rank)
		}
		out = append(out, int(v))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// expand builds an index of a space of the given rank from the kept
// indices (the dims not in axes, in order) and the reduced ones.
func expand(rank int, axes []int, kept, reduced []*ir.Value) []*ir.Value {
	out := make([]*ir.Value, rank)
	j, r := 0, 0
	for d := range rank {
		if slices.Contains(axes, d) {
			out[d] = reduced[r]
			r++
		} else {
			out[d] = kept[j]
			j++
		}
	}
	return out
}

// nonUnit lists the dims of shape that are not 1.
func nonUnit(shape []int64) []int {
	var out []int
	for d, n := range shape {
		if n != 1 {
			out = append(out, d)
		}
	}
	return out
}

// sameSpace reports whether shapes a and b hold the same elements in the
// same row-major order: equal non-unit dims, or equal static counts.
func sameSpace(a, b []int64) bool {
	if squeezeEqual(a, b) {
		return true
	}
	na, nb := ir.NumElements(a), ir.NumElements(b)
	return na >= 0 && na == nb
}

func squeezeEqual(a, b []int64) bool {
	da, db := nonUnit(a), nonUnit(b)
	if len(da) != len(db) {
		return false
	}
	for i := range da {
		if a[da[i]] != b[db[i]] {
			return false
		}
	}
	return true
}

// remap converts the index idx of shape from into the index of the same
// element in shape to (both row-major over the same elements).
func (k *kernel) remap(from []int64, idx []*ir.Value, to []int64) ([]*ir.Value, error) {
	if slices.Equal(from, to) {
		return idx, nil
	}
	out := make([]*ir.Value, len(to))
	if squeezeEqual(from, to) {
		df, dt := nonUnit(from), nonUnit(to)
		for d := range out {
			out[d] = k.index(0)
		}
		for i := range dt {
			out[dt[i]] = idx[df[i]]
		}
		return out, nil
	}
	if ir.NumElements(from) < 0 || ir.NumElements(to) < 0 {
		return nil, errorf(k.loc, "cannot remap indices between dynamic shapes %v and %v", from, to)
	}
	// Dim by dim where the shapes agree, merging and splitting only the
	// runs of dims whose products match ([B, T, N] to [B·T, N]: b·T + t,
	// then n as it is).
	for _, g := range reshapeGroups(from, to) {
		copy(out[g.to[0]:g.to[1]], k.regroup(from[g.from[0]:g.from[1]], idx[g.from[0]:g.from[1]], to[g.to[0]:g.to[1]]))
	}
	return out, nil
}

// dimGroup pairs the dims [from[0], from[1]) of one shape with the dims
// [to[0], to[1]) of another that hold the same number of elements.
type dimGroup struct{ from, to [2]int }

// reshapeGroups splits two static shapes of the same element count into
// the shortest runs of dims with equal products, in order.
func reshapeGroups(from, to []int64) []dimGroup {
	var gs []dimGroup
	i, j := 0, 0
	for i < len(from) || j < len(to) {
		g := dimGroup{from: [2]int{i, i}, to: [2]int{j, j}}
		pf, pt := int64(1), int64(1)
		if i < len(from) {
			pf *= from[i]
			i++
		}
		if j < len(to) {
			pt *= to[j]
			j++
		}
		for pf != pt {
			switch {
			case i == len(from) || j == len(to):
				// One side is spent (a count of 0): the rest is one run.
				i, j = len(from), len(to)
			case pf < pt:
				pf *= from[i]
				i++
			default:
				pt *= to[j]
				j++
			}
			if i == len(from) && j == len(to) {
				break
			}
		}
		g.from[1], g.to[1] = i, j
		gs = append(gs, g)
	}
	return gs
}

// regroup maps the index idx over dims from to the index of the same
// element over dims to (the same count): the linear index, then its
// digits. A run that splits one index is recorded, so that merging the
// digits back gives that index itself rather than arithmetic on it: the
// epilogue of a matmul nest over [B·T, N] that reads its product through
// [B, T, N] then reads the product at the nest's own index.
func (k *kernel) regroup(from []int64, idx []*ir.Value, to []int64) []*ir.Value {
	if len(from) == 1 && len(to) == 1 {
		return idx
	}
	var lin *ir.Value
	if len(idx) > 0 {
		lin = k.lookup(k.splitKey(idx, from))
	}
	if lin == nil {
		lin = k.index(0)
		for d, n := range from {
			lin = k.indexOp(arith.OpAddI, k.indexOp(arith.OpMulI, lin, k.index(n)), idx[d])
		}
	}
	out := make([]*ir.Value, len(to))
	if len(to) == 1 {
		out[0] = lin
		return out
	}
	rest := lin
	for d := len(to) - 1; d >= 0; d-- {
		n := k.index(to[d])
		out[d] = k.indexOp(arith.OpRemUI, rest, n)
		rest = k.indexOp(arith.OpDivUI, rest, n)
	}
	k.remember(k.splitKey(out, to), lin)
	return out
}

// splitKey is the memo key of the digits idx over dims shape.
func (k *kernel) splitKey(idx []*ir.Value, shape []int64) memoKey {
	ops := slices.Clone(idx)
	for _, n := range shape {
		ops = append(ops, k.index(n))
	}
	return k.opKey("split", uint64(len(idx)), nil, ops)
}

// store writes v at idx into buf, in the scope of the current innermost
// level.
func (k *kernel) store(v *ir.Value, idx []*ir.Value, buf *ir.Value) error {
	s, err := k.value(v, idx)
	if err != nil {
		return err
	}
	loop.Store(k.place(len(k.scopes)-1), k.loc, s, buf, idx...)
	return nil
}

// Scopes, levels and memoization.

func (k *kernel) id(v *ir.Value) uint64 {
	if k.ids == nil {
		k.ids = map[*ir.Value]uint64{}
	}
	if id, ok := k.ids[v]; ok {
		return id
	}
	id := uint64(len(k.ids) + 1)
	k.ids[v] = id
	return id
}

// add appends v to the values of key.
func (key *memoKey) add(k *kernel, i int, v *ir.Value) {
	if i < len(key.vs) {
		key.vs[i] = v
		return
	}
	key.more = string(binary.AppendUvarint([]byte(key.more), k.id(v)))
}

// opKey is the key of op tag (with aux and typ) on operands.
func (k *kernel) opKey(tag string, aux uint64, typ ir.Type, operands []*ir.Value) memoKey {
	key := memoKey{tag: tag, aux: aux, typ: typ}
	for i, v := range operands {
		key.add(k, i, v)
	}
	return key
}

// elemKey is the key of the element of v at idx under tag.
func (k *kernel) elemKey(tag string, v *ir.Value, idx []*ir.Value) memoKey {
	key := memoKey{tag: tag}
	key.vs[0] = v
	for i, x := range idx {
		key.add(k, i+1, x)
	}
	return key
}

func (k *kernel) lookup(key memoKey) *ir.Value {
	for i := len(k.memo) - 1; i >= 0; i-- {
		if v, ok := k.memo[i][key]; ok {
			return v
		}
	}
	return nil
}

func (k *kernel) remember(key memoKey, v *ir.Value) { k.memo[len(k.memo)-1][key] = v }

func (k *kernel) levelOf(vs ...*ir.Value) int {
	l := k.floor
	for _, v := range vs {
		if lv, ok := k.level[v]; ok && lv > l {
			l = lv
		}
	}
	return l
}

// placeAt moves b to where values of level l go.
func (k *kernel) placeAt(b *ir.Builder, l int) {
	s := k.scopes[l]
	if s.open != nil {
		b.SetInsertionPointBefore(s.open)
	} else {
		b.SetInsertionPointToEnd(s.blk)
	}
}

// builderAt returns a new builder for level l, for ops with regions whose
// bodies are built while it is held.
func (k *kernel) builderAt(l int) *ir.Builder {
	b := ir.NewBuilder(k.c.ctx)
	k.placeAt(b, l)
	return b
}

// place returns the kernel's builder moved to level l: for single ops,
// which are made before anything else moves it.
func (k *kernel) place(l int) *ir.Builder {
	k.placeAt(k.at, l)
	return k.at
}

// emit memoizes and places the scalar made by mk from operands: op tag
// with aux and typ (see memoKey).
func (k *kernel) emit(tag string, aux uint64, typ ir.Type, operands []*ir.Value, mk func(b *ir.Builder) *ir.Value) *ir.Value {
	key := k.opKey(tag, aux, typ, operands)
	if v := k.lookup(key); v != nil {
		return v
	}
	l := k.levelOf(operands...)
	v := mk(k.place(l))
	k.level[v] = l
	k.remember(key, v)
	return v
}

// constant returns the scalar constant attribute a.
func (k *kernel) constant(a ir.Attribute) *ir.Value {
	switch c := a.(type) {
	case ir.IntegerAttr:
		return k.intAttr(c)
	case ir.FloatAttr:
		return k.floatAttr(c)
	}
	key := memoKey{tag: "c", more: a.String()}
	if v := k.lookup(key); v != nil {
		return v
	}
	return k.newConstant(key, a)
}

// intAttr and floatAttr are constant for the common attributes: a hit in
// the memo does not box the attribute.
func (k *kernel) intAttr(c ir.IntegerAttr) *ir.Value {
	key := memoKey{tag: "ci", typ: c.Type, aux: uint64(c.Value)}
	if v := k.lookup(key); v != nil {
		return v
	}
	return k.newConstant(key, c)
}

func (k *kernel) floatAttr(c ir.FloatAttr) *ir.Value {
	key := memoKey{tag: "cf", typ: c.Type, aux: c.Bits}
	if v := k.lookup(key); v != nil {
		return v
	}
	return k.newConstant(key, c)
}

func (k *kernel) newConstant(key memoKey, a ir.Attribute) *ir.Value {
	l := k.floor
	v := arith.Constant(k.place(l), k.loc, a)
	k.level[v] = l
	k.remember(key, v)
	return v
}

func (k *kernel) index(n int64) *ir.Value {
	return k.intAttr(ir.IntegerAttr{Value: n, Type: ir.Index})
}

func (k *kernel) intConst(n int64, t ir.Type) *ir.Value {
	return k.intAttr(ir.IntegerAttr{Value: ir.TruncInt(n, t), Type: t})
}

func (k *kernel) floatConst(f float64, t ir.Type) *ir.Value {
	return k.floatAttr(ir.Float(f, t.(*ir.FloatType)))
}

// indexOp emits an arith op on index values, folding the common constant
// cases so that index math stays small.
func (k *kernel) indexOp(name string, a, b *ir.Value) *ir.Value {
	ca, aok := constIndex(a)
	cb, bok := constIndex(b)
	if bok && cb == 0 && (name == arith.OpDivUI || name == arith.OpRemUI) {
		// The divisors of index math are extents: an index is taken apart
		// by the size of a dim only to address that dim, which holds no
		// element when the size is 0. The code can only run hoisted out
		// of a loop that runs zero times; its value is never used, and a
		// division by zero there would fail the kernel.
		return k.index(0)
	}
	switch {
	case aok && bok:
		switch name {
		case arith.OpAddI:
			return k.index(ca + cb)
		case arith.OpSubI:
			return k.index(ca - cb)
		case arith.OpMulI:
			return k.index(ca * cb)
		case arith.OpDivUI:
			return k.index(int64(uint64(ca) / uint64(cb)))
		case arith.OpRemUI:
			return k.index(int64(uint64(ca) % uint64(cb)))
		}
	case bok && cb == 0 && (name == arith.OpAddI || name == arith.OpSubI):
		return a
	case aok && ca == 0 && name == arith.OpAddI:
		return b
	case bok && cb == 1 && (name == arith.OpMulI || name == arith.OpDivUI):
		return a
	case aok && ca == 1 && name == arith.OpMulI:
		return b
	case (aok && ca == 0 || bok && cb == 0) && name == arith.OpMulI:
		return k.index(0)
	case bok && cb == 1 && name == arith.OpRemUI:
		return k.index(0)
	}
	return k.binary(name, a, b)
}

func constIndex(v *ir.Value) (int64, bool) {
	op := v.DefiningOp()
	if op == nil || op.Name() != arith.OpConstant || v.Type() != ir.Index {
		return 0, false
	}
	a, ok := op.Attr("value").(ir.IntegerAttr)
	return a.Value, ok
}

func (k *kernel) binary(name string, a, b *ir.Value) *ir.Value {
	return k.emit(name, 0, nil, []*ir.Value{a, b}, func(bld *ir.Builder) *ir.Value { return arith.Binary(bld, name, k.loc, a, b) })
}

func (k *kernel) unary(name string, a *ir.Value) *ir.Value {
	return k.emit(name, 0, nil, []*ir.Value{a}, func(bld *ir.Builder) *ir.Value { return arith.Unary(bld, name, k.loc, a) })
}

func (k *kernel) cmpf(p arith.CmpFPredicate, a, b *ir.Value) *ir.Value {
	return k.emit(arith.OpCmpF, uint64(p), nil, []*ir.Value{a, b}, func(bld *ir.Builder) *ir.Value { return arith.NewCmpF(bld, k.loc, p, a, b) })
}

func (k *kernel) cmpi(p arith.CmpIPredicate, a, b *ir.Value) *ir.Value {
	return k.emit(arith.OpCmpI, uint64(p), nil, []*ir.Value{a, b}, func(bld *ir.Builder) *ir.Value { return arith.NewCmpI(bld, k.loc, p, a, b) })
}

func (k *kernel) sel(c, a, b *ir.Value) *ir.Value {
	if a == b {
		return a
	}
	return k.emit(arith.OpSelect, 0, nil, []*ir.Value{c, a, b}, func(bld *ir.Builder) *ir.Value { return arith.NewSelect(bld, k.loc, c, a, b) })
}

func (k *kernel) cast(name string, a *ir.Value, to ir.Type) *ir.Value {
	return k.emit(name, 0, to, []*ir.Value{a}, func(bld *ir.Builder) *ir.Value { return arith.NewCast(bld, name, k.loc, a, to) })
}

// load emits the element of buffer m at idx, memoized.
//
// A buffer with a static size of 0 holds no element: a load of it can only
// be placed (hoisted, as every value is, to the level of its operands) out
// of a loop over that empty dim, which runs zero times, so its value is
// never used; it is the zero of the element type rather than a load that
// would be out of bounds.
func (k *kernel) load(m *ir.Value, idx []*ir.Value) *ir.Value {
	if slices.Contains(shapeOf(m), 0) {
		return k.zero(elemOf(m))
	}
	key := k.elemKey("load", m, idx)
	if v := k.lookup(key); v != nil {
		return v
	}
	l := max(k.levelOf(m), k.levelOf(idx...))
	v := loop.Load(k.place(l), k.loc, m, idx...)
	k.level[v] = l
	k.remember(key, v)
	return v
}

// loops opens a nest of loop.for ops from 0 to each of ubs (step 1) at
// level l or deeper, carrying inits through every level, and builds the
// innermost body with body; it returns the final iter values, at the level
// the nest is placed.
func (k *kernel) loops(l int, ubs, inits []*ir.Value, body func(ivs, iters []*ir.Value) ([]*ir.Value, error)) ([]*ir.Value, error) {
	var rec func(l int, ivs []*ir.Value, inits []*ir.Value) ([]*ir.Value, error)
	rec = func(l int, ivs []*ir.Value, inits []*ir.Value) ([]*ir.Value, error) {
		if len(ivs) == len(ubs) {
			return body(ivs, inits)
		}
		return k.forLoop(l, k.index(0), ubs[len(ivs)], inits, func(iv *ir.Value, iters []*ir.Value) ([]*ir.Value, error) {
			return rec(k.level[iv], append(slices.Clip(ivs), iv), iters)
		})
	}
	return rec(l, nil, inits)
}

// forLoop places a loop.for from lb to ub at level l (or deeper, as its
// operands need) and builds its body; see kernel.
func (k *kernel) forLoop(l int, lb, ub *ir.Value, inits []*ir.Value, body func(iv *ir.Value, iters []*ir.Value) ([]*ir.Value, error)) ([]*ir.Value, error) {
	l = max(l, k.levelOf(append([]*ir.Value{lb, ub}, inits...)...))
	b := k.builderAt(l)
	saved := slices.Clone(k.scopes[l+1:])
	k.scopes = k.scopes[:l+1]
	prev := k.scopes[l].open
	var err error
	op := loop.For(b, k.loc, lb, ub, k.index(1), inits, func(_ *ir.Builder, iv *ir.Value, iters []*ir.Value) []*ir.Value {
		blk := iv.ParentBlock()
		k.scopes[l].open = blk.ParentOp()
		k.scopes = append(k.scopes, &scope{blk: blk})
		for _, v := range append([]*ir.Value{iv}, iters...) {
			k.level[v] = l + 1
		}
		next, e := body(iv, iters)
		if e != nil {
			err = e
			return iters
		}
		return next
	})
	k.scopes = append(k.scopes[:l+1], saved...)
	k.scopes[l].open = prev
	for _, r := range op.Results() {
		k.level[r] = l
	}
	return op.Results(), err
}

// ifElse places loop.if cond, yielding one value of type t made by then or
// els, at the level of cond and deps. Nothing computed inside is hoisted out
// of the regions: they guard loads that are out of bounds otherwise.
func (k *kernel) ifElse(cond *ir.Value, deps []*ir.Value, t ir.Type, then, els func() (*ir.Value, error)) (*ir.Value, error) {
	l := k.levelOf(append([]*ir.Value{cond}, deps...)...)
	b := k.builderAt(l)
	saved := slices.Clone(k.scopes[l+1:])
	k.scopes = k.scopes[:l+1]
	prev, prevFloor := k.scopes[l].open, k.floor
	var err error
	region := func(f func() (*ir.Value, error)) loop.IfBody {
		return func(rb *ir.Builder) []*ir.Value {
			blk := rb.InsertionBlock()
			k.scopes[l].open = blk.ParentOp()
			k.scopes = append(k.scopes[:l+1], &scope{blk: blk})
			k.floor = l + 1
			k.memo = append(k.memo, map[memoKey]*ir.Value{})
			defer func() { k.memo = k.memo[:len(k.memo)-1] }()
			v, e := f()
			if e != nil {
				err = e
				v = k.zero(t)
			}
			return []*ir.Value{v}
		}
	}
	op := loop.If(b, k.loc, cond, []ir.Type{t}, region(then), region(els))
	k.scopes = append(k.scopes[:l+1], saved...)
	k.scopes[l].open, k.floor = prev, prevFloor
	k.level[op.Result(0)] = l
	return op.Result(0), err
}

// zero is the zero of a scalar type.
func (k *kernel) zero(t ir.Type) *ir.Value {
	if ir.IsFloat(t) {
		return k.floatConst(0, t)
	}
	return k.intConst(0, t)
}
