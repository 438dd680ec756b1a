package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// LibraryMatmulOp is the host-side product that a vendor library
// (cuBLASLt) computes: convert-loop-to-gpu's matmul=cublaslt lowering.
const LibraryMatmulOp = OpLibraryMatmul

// The unit properties of gpu.library_matmul saying how A and B are stored.
const (
	TransposeAAttr = "transpose_a" // A stored [b…, K, M]
	TransposeBAttr = "transpose_b" // B stored [b…, N, K]
)

var libraryOps = []*ir.OpDef{libraryMatmulDef}

var libraryMatmulDef = &ir.OpDef{
	Name:    LibraryMatmulOp,
	Summary: "A (batched) matrix product computed by a vendor library on the host's stream",
	Description: "Writes C[b…, i, j] = Σₖ A[b…, i, k]·B[b…, k, j] into C for every batch " +
		"index b… (the leading dimensions, equal in A, B and C), with `transpose_a` A stored " +
		"[b…, K, M] and with `transpose_b` B stored [b…, N, K]. A and B are bf16 or f16 (the " +
		"same), C is their type or f32; each product is exact in f32, the sum is accumulated " +
		"in f32 (in an order the library chooses) and rounded once to C's type. K must be " +
		"positive. It is a host op of the launch plan, between kernel launches: the nvptx " +
		"executor runs it with cuBLASLt on the plan's stream, the interpreter sums in order " +
		"of k. convert-loop-to-gpu emits it for matmul nests with `matmul=cublaslt`; the " +
		"nest's epilogue becomes a pointwise kernel reading C.",
	Inherent: []string{TransposeAAttr, TransposeBAttr},
	Operands: []ir.ArgDoc{
		{Name: "a", Doc: "memref of rank r ≥ 2: [b…, M, K], or [b…, K, M] with transpose_a"},
		{Name: "b", Doc: "memref of rank r: [b…, K, N], or [b…, N, K] with transpose_b"},
		{Name: "c", Doc: "memref of rank r: [b…, M, N], written"},
	},
	Attrs: []ir.ArgDoc{
		{Name: TransposeAAttr, Doc: "present when A is stored K first (UnitAttr)"},
		{Name: TransposeBAttr, Doc: "present when B is stored K last (UnitAttr)"},
	},
	Example: `"gpu.library_matmul"(%a, %b, %c) <{transpose_b}> : (memref<64x32xbf16>, memref<48x32xbf16>, memref<64x48xf32>) -> ()`,
	Verify:  verifyLibraryMatmul,
}

// LibraryMatmul inserts gpu.library_matmul writing A·B into c.
func LibraryMatmul(b *ir.Builder, loc ir.Location, a, bm, c *ir.Value, transA, transB bool) *ir.Operation {
	var attrs []ir.NamedAttr
	if transA {
		attrs = append(attrs, ir.NamedAttr{Name: TransposeAAttr, Value: ir.UnitAttr{}})
	}
	if transB {
		attrs = append(attrs, ir.NamedAttr{Name: TransposeBAttr, Value: ir.UnitAttr{}})
	}
	return b.Op(LibraryMatmulOp, loc, []*ir.Value{a, bm, c}, nil, attrs...)
}

// LibraryTransposes returns gpu.library_matmul's transpose_a and
// transpose_b.
func LibraryTransposes(op *ir.Operation) (transA, transB bool) {
	_, transA = op.Attr(TransposeAAttr).(ir.UnitAttr)
	_, transB = op.Attr(TransposeBAttr).(ir.UnitAttr)
	return transA, transB
}

// MatmulDims returns the sizes of gpu.library_matmul's product from the
// shapes of A, B and C (ir.Dynamic where unknown): the batch extents, M,
// N and K, or an error when two known sizes disagree.
func MatmulDims(a, b, c []int64, transA, transB bool) (batch []int64, m, n, k int64, err error) {
	r := len(a)
	if r < 2 || len(b) != r || len(c) != r {
		return nil, 0, 0, 0, fmt.Errorf("A, B and C must have one rank of at least 2, not %d, %d and %d", len(a), len(b), len(c))
	}
	// agree merges the sizes that must be equal, naming the dimension.
	agree := func(what string, sizes ...int64) (int64, error) {
		out := int64(ir.Dynamic)
		for _, s := range sizes {
			switch {
			case s == ir.Dynamic:
			case out == ir.Dynamic:
				out = s
			case s != out:
				return 0, fmt.Errorf("%s is %d in one operand and %d in another", what, out, s)
			}
		}
		return out, nil
	}
	for d := range r - 2 {
		e, err := agree(fmt.Sprintf("batch dimension %d", d), a[d], b[d], c[d])
		if err != nil {
			return nil, 0, 0, 0, err
		}
		batch = append(batch, e)
	}
	am, ak := a[r-2], a[r-1]
	if transA {
		am, ak = ak, am
	}
	bk, bn := b[r-2], b[r-1]
	if transB {
		bk, bn = bn, bk
	}
	if m, err = agree("M", am, c[r-2]); err == nil {
		if n, err = agree("N", bn, c[r-1]); err == nil {
			k, err = agree("K", ak, bk)
		}
	}
	return batch, m, n, k, err
}

func verifyLibraryMatmul(op *ir.Operation) error {
	if op.ParentOfType(FuncOp) != nil {
		return fmt.Errorf("is a host op: it cannot be nested in a '%s'", FuncOp)
	}
	if op.NumOperands() != 3 || op.NumResults() != 0 {
		return fmt.Errorf("expects three memref operands (A, B, C) and no results")
	}
	var shapes [3][]int64
	var elems [3]ir.Type
	for i, v := range op.Operands() {
		mt, ok := v.Type().(*ir.MemRefType)
		if !ok || !mt.Ranked() || mt.Layout != nil || mt.MemorySpace != nil {
			return fmt.Errorf("operand #%d must be a ranked memref of global memory with the identity layout, not %s", i, v.Type())
		}
		shapes[i], elems[i] = mt.Shape(), mt.ElementType()
	}
	for _, name := range []string{TransposeAAttr, TransposeBAttr} {
		if a := op.Attr(name); a != nil {
			if _, ok := a.(ir.UnitAttr); !ok {
				return fmt.Errorf("'%s' must be a unit attribute", name)
			}
		}
	}
	switch {
	case elems[0] != ir.BF16 && elems[0] != ir.F16:
		return fmt.Errorf("A must hold bf16 or f16, not %s", elems[0])
	case elems[1] != elems[0]:
		return fmt.Errorf("B must hold A's %s, not %s", elems[0], elems[1])
	case elems[2] != elems[0] && elems[2] != ir.F32:
		return fmt.Errorf("C must hold %s or f32, not %s", elems[0], elems[2])
	}
	transA, transB := LibraryTransposes(op)
	_, _, _, k, err := MatmulDims(shapes[0], shapes[1], shapes[2], transA, transB)
	if err == nil && k == 0 {
		err = fmt.Errorf("K must be positive")
	}
	return err
}
