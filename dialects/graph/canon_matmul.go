package graph

import "github.com/strata-ir/strata/ir"

// matmulFoldBatch rewrites a batched matmul whose rhs is one matrix
// shared by every batch, lhs [b…, M, K] · rhs [K, N] (or rhs [1…, K, N]),
// into one 2-D matmul of the rows, reshape(reshape(lhs, [b…·M, K]) · rhs,
// [b…, M, N]): a linear layer applied to [batch, tokens, features]; and
// a matrix times a batch of one, [M, K] · [1…, K, N] (an embedding's
// gradient), into the 2-D product reshaped to [1…, M, N]. Each
// result element is the same sum in the same order, so the values do not
// change; the 2-D product is what the tensor-core and library lowerings
// take (a batched nest with a broadcast operand is neither). A bias [N]
// goes with the 2-D product unchanged. Static shapes
// only: the row count is then a constant.
var matmulFoldBatch = &ir.Pattern{
	Name: "graph.matmul-fold-batch", Root: Name + ".matmul", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		lt, ok1 := op.Operand(0).Type().(*ir.TensorType)
		rt, ok2 := op.Operand(1).Type().(*ir.TensorType)
		res, ok3 := op.Result(0).Type().(*ir.TensorType)
		if !ok1 || !ok2 || !ok3 || !lt.Ranked() || !rt.Ranked() || !res.Ranked() {
			return false
		}
		ls, rs := lt.Shape(), rt.Shape()
		if len(ls) < 2 || len(rs) < 2 || max(len(ls), len(rs)) < 3 || ir.NumElements(ls) < 0 || numElements(res.Shape()) < 0 {
			return false
		}
		for _, n := range rs[:len(rs)-2] {
			if n != 1 {
				return false // rhs has batches of its own
			}
		}
		rows := ir.NumElements(ls[:len(ls)-1])
		k := ls[len(ls)-1]
		r.SetInsertionPointBefore(op)
		a, err := Build(&r.Builder, "reshape", op.Loc(), []*ir.Value{op.Operand(0)}, ir.Dict(ir.NamedAttr{Name: "shape", Value: Ints(rows, k)}))
		if err != nil {
			return false
		}
		b := op.Operand(1)
		if len(rs) > 2 {
			if b, err = Build(&r.Builder, "reshape", op.Loc(), []*ir.Value{b}, ir.Dict(ir.NamedAttr{Name: "shape", Value: Ints(rs[len(rs)-2:]...)})); err != nil {
				return false
			}
		}
		mm, err := Build(&r.Builder, "matmul", op.Loc(), append([]*ir.Value{a, b}, op.Operands()[2:]...), nil)
		if err != nil {
			return false
		}
		out, err := Build(&r.Builder, "reshape", op.Loc(), []*ir.Value{mm}, ir.Dict(ir.NamedAttr{Name: "shape", Value: Ints(res.Shape()...)}))
		if err != nil || out.Type() != op.Result(0).Type() {
			return false
		}
		r.ReplaceOp(op, []*ir.Value{out})
		return true
	},
}

// transposeMatmul rewrites the matrix transpose of a 2-D product that
// nothing else reads, transpose(a·b), into bᵀ·aᵀ: the same products summed
// in the same order, so the values do not change, and the product is
// written in the layout its readers want. A tied embedding's gradient
// from the output head, x·wteᵀ, is the transpose of xᵀ·g: the pointwise
// kernel that adds it to the token embedding's gradient read it a column
// at a time ([768, 50304] read as [50304, 768], 1.1 TB/s on the H200);
// as gᵀ·x (xᵀᵀ folds away) the library writes it row-major. Both
// transposes are views a product reads in place.
var transposeMatmul = &ir.Pattern{
	Name: "graph.transpose-matmul", Root: Name + ".transpose", Benefit: 1,
	Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
		mm := definedBy(op.Operand(0), "matmul")
		if mm == nil || mm.NumOperands() != 2 || !mm.Result(0).HasOneUse() || !SwapsLastTwo(op) {
			return false
		}
		// Static matrices only: the new ops' types are then the ones
		// checked below, and nothing is built that is not used.
		for _, v := range []*ir.Value{mm.Operand(0), mm.Operand(1), op.Result(0)} {
			if t, ok := v.Type().(*ir.TensorType); !ok || !t.Ranked() || len(t.Shape()) != 2 || ir.NumElements(t.Shape()) < 0 {
				return false
			}
		}
		r.SetInsertionPointBefore(op)
		swap := ir.Dict(ir.NamedAttr{Name: "perm", Value: Ints(1, 0)})
		bt, err := Build(&r.Builder, "transpose", op.Loc(), []*ir.Value{mm.Operand(1)}, swap)
		if err != nil {
			return false
		}
		at, err := Build(&r.Builder, "transpose", op.Loc(), []*ir.Value{mm.Operand(0)}, swap)
		if err != nil {
			return false
		}
		out, err := Build(&r.Builder, "matmul", op.Loc(), []*ir.Value{bt, at}, nil)
		if err != nil || out.Type() != op.Result(0).Type() {
			return false
		}
		r.ReplaceOp(op, []*ir.Value{out})
		return true
	},
}
