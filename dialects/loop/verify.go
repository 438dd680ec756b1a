package loop

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// Verifiers. Messages follow upstream MLIR's memref and scf dialects, naming
// the sizes and types involved; the verifier prefixes them with "'loop.x' op".

// rankedMemRef returns t as a ranked memref, or an error naming what.
func rankedMemRef(t ir.Type, what string) (*ir.MemRefType, error) {
	m, ok := t.(*ir.MemRefType)
	if !ok || !m.Ranked() {
		return nil, fmt.Errorf("%s must be a ranked memref, but got '%s'", what, t)
	}
	return m, nil
}

// checkIndices checks that vs are all of index type; first is the operand
// number of vs[0], for the message.
func checkIndices(vs []*ir.Value, first int) error {
	for i, v := range vs {
		if v.Type() != ir.Index {
			return fmt.Errorf("operand #%d must be index, but got '%s'", first+i, v.Type())
		}
	}
	return nil
}

// i64Prop returns the i64 property name of op.
func i64Prop(op *ir.Operation, name string) (int64, bool) {
	a, ok := op.Attr(name).(ir.IntegerAttr)
	if !ok || a.Type != ir.I64 {
		return 0, false
	}
	return a.Value, true
}

func numDynamic(m *ir.MemRefType) int {
	n := 0
	for _, d := range m.Shape() {
		if d == ir.Dynamic {
			n++
		}
	}
	return n
}

func verifyAlloc(op *ir.Operation) error {
	if op.NumResults() != 1 {
		return fmt.Errorf("requires one result, but found %d", op.NumResults())
	}
	m, err := rankedMemRef(op.Result(0).Type(), "result")
	if err != nil {
		return err
	}
	if want := numDynamic(m); op.NumOperands() != want {
		return fmt.Errorf("dimension operand count (%d) does not equal memref dynamic dimension count (%d) of '%s'", op.NumOperands(), want, m)
	}
	if err := checkIndices(op.Operands(), 0); err != nil {
		return err
	}
	if op.Attr(AlignmentAttr) != nil {
		a, ok := i64Prop(op, AlignmentAttr)
		if !ok || a <= 0 || a&(a-1) != 0 {
			return fmt.Errorf("attribute '%s' failed to satisfy constraint: 64-bit signless integer attribute whose value is a positive power of two, but got %s", AlignmentAttr, op.Attr(AlignmentAttr))
		}
	}
	return nil
}

func verifyDealloc(op *ir.Operation) error {
	if op.NumOperands() != 1 || op.NumResults() != 0 {
		return fmt.Errorf("requires one operand and no results, but found %d operands and %d results", op.NumOperands(), op.NumResults())
	}
	_, err := rankedMemRef(op.Operand(0).Type(), "operand #0")
	return err
}

// verifyAccess checks a memref operand at position at followed by its
// indices, and returns the memref type.
func verifyAccess(op *ir.Operation, at int, kind string) (*ir.MemRefType, error) {
	if op.NumOperands() <= at {
		return nil, fmt.Errorf("requires a memref operand #%d", at)
	}
	m, err := rankedMemRef(op.Operand(at).Type(), fmt.Sprintf("operand #%d", at))
	if err != nil {
		return nil, err
	}
	indices := op.Operands()[at+1:]
	if len(indices) != len(m.Shape()) {
		return nil, fmt.Errorf("incorrect number of indices for %s, expected %d but got %d", kind, len(m.Shape()), len(indices))
	}
	return m, checkIndices(indices, at+1)
}

func verifyLoad(op *ir.Operation) error {
	m, err := verifyAccess(op, 0, "load")
	if err != nil {
		return err
	}
	if op.NumResults() != 1 || op.Result(0).Type() != m.ElementType() {
		return fmt.Errorf("result type must be the element type '%s' of '%s', but got (%s)", m.ElementType(), m, typeList(op.ResultTypes()))
	}
	return nil
}

func verifyStore(op *ir.Operation) error {
	if op.NumResults() != 0 {
		return fmt.Errorf("requires no results, but found %d", op.NumResults())
	}
	m, err := verifyAccess(op, 1, "store")
	if err != nil {
		return err
	}
	if t := op.Operand(0).Type(); t != m.ElementType() {
		return fmt.Errorf("value type '%s' must match the element type '%s' of '%s'", t, m.ElementType(), m)
	}
	return nil
}

func verifyDim(op *ir.Operation) error {
	if op.NumOperands() != 1 {
		return fmt.Errorf("requires one operand, but found %d", op.NumOperands())
	}
	m, err := rankedMemRef(op.Operand(0).Type(), "operand #0")
	if err != nil {
		return err
	}
	if op.NumResults() != 1 || op.Result(0).Type() != ir.Index {
		return fmt.Errorf("requires one result of type index, but got (%s)", typeList(op.ResultTypes()))
	}
	i, ok := i64Prop(op, IndexAttr)
	if !ok {
		return fmt.Errorf("requires i64 property '%s'", IndexAttr)
	}
	if i < 0 || i >= int64(len(m.Shape())) {
		return fmt.Errorf("index %d is out of range for '%s' of rank %d", i, m, len(m.Shape()))
	}
	return nil
}

// body returns the single block of op's region i, or an error.
func body(op *ir.Operation, i int, what string) (*ir.Block, error) {
	if i >= op.NumRegions() || op.Region(i).Empty() {
		return nil, fmt.Errorf("requires a non-empty %s region", what)
	}
	return op.Region(i).Front(), nil
}

// checkTerminator checks that blk ends with an op named name.
func checkTerminator(blk *ir.Block, name string) (*ir.Operation, error) {
	t := blk.Last()
	if t == nil || t.Name() != name {
		got := "nothing"
		if t != nil {
			got = "'" + t.Name() + "'"
		}
		return nil, fmt.Errorf("expects its body to end with '%s', but found %s", name, got)
	}
	return t, nil
}

// checkYield checks that the yield y passes values of types want.
func checkYield(y *ir.Operation, want []ir.Type, parent string) error {
	got := y.OperandTypes()
	if len(got) != len(want) {
		return fmt.Errorf("'%s' passes %d values, but the enclosing '%s' expects %d", YieldOp, len(got), parent, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("'%s' operand #%d has type '%s', but the enclosing '%s' expects '%s'", YieldOp, i, got[i], parent, want[i])
		}
	}
	return nil
}

func verifyFor(op *ir.Operation) error {
	if op.NumOperands() < 3 {
		return fmt.Errorf("requires lower bound, upper bound and step operands, but found %d operands", op.NumOperands())
	}
	if err := checkIndices(op.Operands()[:3], 0); err != nil {
		return err
	}
	inits := op.Operands()[3:]
	if len(inits) != op.NumResults() {
		return fmt.Errorf("mismatch in number of loop-carried values (%d) and results (%d)", len(inits), op.NumResults())
	}
	for i, v := range inits {
		if v.Type() != op.Result(i).Type() {
			return fmt.Errorf("init #%d has type '%s', but result #%d has type '%s'", i, v.Type(), i, op.Result(i).Type())
		}
	}
	if op.NumRegions() != 1 {
		return fmt.Errorf("requires one region, but found %d", op.NumRegions())
	}
	blk, err := body(op, 0, "body")
	if err != nil {
		return err
	}
	if blk.NumArguments() != 1+len(inits) {
		return fmt.Errorf("expects %d body arguments (the induction variable and %d iter args), but found %d", 1+len(inits), len(inits), blk.NumArguments())
	}
	if t := blk.Argument(0).Type(); t != ir.Index {
		return fmt.Errorf("expects the induction variable to be of type index, but found '%s'", t)
	}
	for i, v := range inits {
		if t := blk.Argument(1 + i).Type(); t != v.Type() {
			return fmt.Errorf("iter arg #%d has type '%s', but its init has type '%s'", i, t, v.Type())
		}
	}
	y, err := checkTerminator(blk, YieldOp)
	if err != nil {
		return err
	}
	return checkYield(y, op.ResultTypes(), ForOp)
}

// Segments returns loop.parallel's dimension count N and reduction count K
// from its operandSegmentSizes property.
func Segments(op *ir.Operation) (n, k int, err error) {
	a, ok := op.Attr(SegmentsAttr).(ir.DenseArrayAttr)
	if !ok || a.Elem != ir.I32 || len(a.Values) != 4 {
		return 0, 0, fmt.Errorf("requires property '%s' of type array<i32> with 4 elements", SegmentsAttr)
	}
	v := a.Values
	if v[0] != v[1] || v[0] != v[2] {
		return 0, 0, fmt.Errorf("expects the same number of lower bounds (%d), upper bounds (%d) and steps (%d)", v[0], v[1], v[2])
	}
	if v[0] < 1 || v[3] < 0 {
		return 0, 0, fmt.Errorf("'%s' = %s: needs at least one dimension and no negative count", SegmentsAttr, a)
	}
	if sum := 3*v[0] + v[3]; sum != int64(op.NumOperands()) {
		return 0, 0, fmt.Errorf("'%s' = %s sums to %d, but the op has %d operands", SegmentsAttr, a, sum, op.NumOperands())
	}
	return int(v[0]), int(v[3]), nil
}

func verifyParallel(op *ir.Operation) error {
	n, k, err := Segments(op)
	if err != nil {
		return err
	}
	if err := checkIndices(op.Operands()[:3*n], 0); err != nil {
		return err
	}
	inits := op.Operands()[3*n:]
	if op.NumResults() != k {
		return fmt.Errorf("expects number of results (%d) to be the same as number of initial values (%d)", op.NumResults(), k)
	}
	for i, v := range inits {
		if v.Type() != op.Result(i).Type() {
			return fmt.Errorf("init #%d has type '%s', but result #%d has type '%s'", i, v.Type(), i, op.Result(i).Type())
		}
	}
	if op.NumRegions() != 1 {
		return fmt.Errorf("requires one region, but found %d", op.NumRegions())
	}
	blk, err := body(op, 0, "body")
	if err != nil {
		return err
	}
	if blk.NumArguments() != n {
		return fmt.Errorf("expects %d induction variables as body arguments, but found %d", n, blk.NumArguments())
	}
	for i, a := range blk.Arguments() {
		if a.Type() != ir.Index {
			return fmt.Errorf("expects induction variable #%d to be of type index, but found '%s'", i, a.Type())
		}
	}
	red, err := checkTerminator(blk, ReduceOp)
	if err != nil {
		return err
	}
	if red.NumOperands() != k {
		return fmt.Errorf("'%s' passes %d values, but the loop has %d results", ReduceOp, red.NumOperands(), k)
	}
	for i, v := range red.Operands() {
		if v.Type() != op.Result(i).Type() {
			return fmt.Errorf("'%s' operand #%d has type '%s', but result #%d has type '%s'", ReduceOp, i, v.Type(), i, op.Result(i).Type())
		}
	}
	return nil
}

func verifyReduce(op *ir.Operation) error {
	if p := op.ParentOp(); p == nil || p.Name() != ParallelOp {
		return fmt.Errorf("expects parent op '%s'", ParallelOp)
	}
	if op.NumRegions() != op.NumOperands() {
		return fmt.Errorf("expects number of reduction regions (%d) to be the same as number of reduced values (%d)", op.NumRegions(), op.NumOperands())
	}
	for i, v := range op.Operands() {
		t := v.Type()
		blk, err := body(op, i, fmt.Sprintf("reduction #%d", i))
		if err != nil {
			return err
		}
		if blk.NumArguments() != 2 || blk.Argument(0).Type() != t || blk.Argument(1).Type() != t {
			return fmt.Errorf("expects two arguments of type '%s' in reduction region #%d, but found (%s)", t, i, typeList(argTypes(blk)))
		}
		y, err := checkTerminator(blk, YieldOp)
		if err != nil {
			return fmt.Errorf("reduction region #%d %w", i, err)
		}
		if err := checkYield(y, []ir.Type{t}, ReduceOp); err != nil {
			return fmt.Errorf("reduction region #%d: %w", i, err)
		}
	}
	return nil
}

func verifyIf(op *ir.Operation) error {
	if op.NumOperands() != 1 || op.Operand(0).Type() != ir.I1 {
		return fmt.Errorf("requires one i1 condition operand, but got (%s)", typeList(op.OperandTypes()))
	}
	if op.NumRegions() != 2 {
		return fmt.Errorf("requires two regions (then, else), but found %d", op.NumRegions())
	}
	for i, what := range []string{"then", "else"} {
		r := op.Region(i)
		if r.Empty() {
			if i == 0 {
				return errors.New("requires a non-empty then region")
			}
			if op.NumResults() > 0 {
				return fmt.Errorf("must have an else region when it has results (%d)", op.NumResults())
			}
			continue
		}
		blk := r.Front()
		if blk.NumArguments() != 0 {
			return fmt.Errorf("expects the %s region to have no arguments, but found %d", what, blk.NumArguments())
		}
		y, err := checkTerminator(blk, YieldOp)
		if err != nil {
			return fmt.Errorf("%s region %w", what, err)
		}
		if err := checkYield(y, op.ResultTypes(), IfOp); err != nil {
			return fmt.Errorf("%s region: %w", what, err)
		}
	}
	return nil
}

func verifyYield(op *ir.Operation) error {
	p := op.ParentOp()
	if p == nil || (p.Name() != ForOp && p.Name() != IfOp && p.Name() != ReduceOp) {
		return fmt.Errorf("expects parent op to be one of '%s', '%s', '%s'", ForOp, IfOp, ReduceOp)
	}
	return nil
}

func argTypes(b *ir.Block) []ir.Type {
	ts := make([]ir.Type, b.NumArguments())
	for i, a := range b.Arguments() {
		ts[i] = a.Type()
	}
	return ts
}

// typeList formats types as "t1, t2".
func typeList(ts []ir.Type) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, ", ")
}
