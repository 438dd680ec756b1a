package gpu

import (
	"errors"
	"fmt"
	"slices"

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

var libraryOps = []*ir.OpDef{libraryMatmulDef, libraryConv2DDef}

var libraryMatmulDef = &ir.OpDef{
	Name:    LibraryMatmulOp,
	Summary: "A (batched) matrix product computed by a vendor library on the host's stream",
	Description: "Writes C[b…, i, j] = Σₖ A[b…, i, k]·B[b…, k, j] into C for every batch " +
		"index b… (the leading dimensions, equal in A, B and C; an A of rank 2 is shared by " +
		"every batch), with `transpose_a` A stored " +
		"[b…, K, M] and with `transpose_b` B stored [b…, N, K]. A and B are bf16 or f16 (the " +
		"same), C is their type or f32; each product is exact in f32, the sum is accumulated " +
		"in f32 (in an order the library chooses) and rounded once to C's type. K must be " +
		"positive. It is a host op of the launch plan, between kernel launches: the nvptx " +
		"executor runs it with cuBLASLt on the plan's stream, the interpreter sums in order " +
		"of k. With a fourth operand, a bias [N] of A's type (C then of A's type too), each sum " +
		"is added to bias[j] in f32 before the one rounding (cuBLASLt's BIAS epilogue; the " +
		"interpreter adds it after the sum over k). convert-loop-to-gpu emits it for matmul nests with " +
		"`matmul=cublaslt`, with the bias when the nest adds one to the sum before rounding it (a " +
		"graph.matmul with a bias); the rest of the nest's epilogue becomes a pointwise kernel reading C.",
	Inherent: []string{TransposeAAttr, TransposeBAttr},
	Operands: []ir.ArgDoc{
		{Name: "a", Doc: "memref of rank r ≥ 2: [b…, M, K], or [b…, K, M] with transpose_a; or of rank 2 ([M, K] or [K, M]), shared by every batch"},
		{Name: "b", Doc: "memref of rank r: [b…, K, N], or [b…, N, K] with transpose_b"},
		{Name: "c", Doc: "memref of rank r: [b…, M, N], written"},
		{Name: "bias", Doc: "optional memref [N] of A's type, added to every row before the rounding"},
	},
	Attrs: []ir.ArgDoc{
		{Name: TransposeAAttr, Doc: "present when A is stored K first (UnitAttr)"},
		{Name: TransposeBAttr, Doc: "present when B is stored K last (UnitAttr)"},
	},
	Example: `"gpu.library_matmul"(%a, %b, %c) <{transpose_b}> : (memref<64x32xbf16>, memref<48x32xbf16>, memref<64x48xf32>) -> ()`,
	Verify:  verifyLibraryMatmul,
}

// LibraryMatmul inserts gpu.library_matmul writing A·B (+ bias, when not
// nil) into c.
func LibraryMatmul(b *ir.Builder, loc ir.Location, a, bm, c, bias *ir.Value, transA, transB bool) *ir.Operation {
	var attrs []ir.NamedAttr
	if transA {
		attrs = append(attrs, ir.NamedAttr{Name: TransposeAAttr, Value: ir.UnitAttr{}})
	}
	if transB {
		attrs = append(attrs, ir.NamedAttr{Name: TransposeBAttr, Value: ir.UnitAttr{}})
	}
	operands := []*ir.Value{a, bm, c}
	if bias != nil {
		operands = append(operands, bias)
	}
	return b.Op(LibraryMatmulOp, loc, operands, nil, attrs...)
}

// LibraryBias returns gpu.library_matmul's bias operand, or nil.
func LibraryBias(op *ir.Operation) *ir.Value {
	if op.NumOperands() == 4 {
		return op.Operand(3)
	}
	return nil
}

// SharedA reports whether gpu.library_matmul's A of shape a is shared by
// every batch of B, of shape b: A has rank 2, B a higher one.
func SharedA(a, b []int64) bool { return len(a) == 2 && len(b) > 2 }

// LibraryTransposes returns gpu.library_matmul's transpose_a and
// transpose_b.
func LibraryTransposes(op *ir.Operation) (transA, transB bool) {
	_, transA = op.Attr(TransposeAAttr).(ir.UnitAttr)
	_, transB = op.Attr(TransposeBAttr).(ir.UnitAttr)
	return transA, transB
}

// MatmulDims returns the sizes of gpu.library_matmul's product from the
// shapes of A, B and C (ir.Dynamic where unknown): the batch extents, M,
// N and K, or an error when two known sizes disagree. An A of rank 2 with
// B and C of a higher rank is shared by every batch.
func MatmulDims(a, b, c []int64, transA, transB bool) (batch []int64, m, n, k int64, err error) {
	if SharedA(a, b) {
		a = append(slices.Clone(b[:len(b)-2]), a...)
	}
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
	if (op.NumOperands() != 3 && op.NumOperands() != 4) || op.NumResults() != 0 {
		return fmt.Errorf("expects three memref operands (A, B, C) and an optional bias, and no results")
	}
	var shapes [4][]int64
	var elems [4]ir.Type
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
	_, _, n, k, err := MatmulDims(shapes[0], shapes[1], shapes[2], transA, transB)
	if err == nil && k == 0 {
		err = errors.New("K must be positive")
	}
	if err == nil && op.NumOperands() == 4 {
		switch {
		case elems[3] != elems[0] || elems[2] != elems[0]:
			err = fmt.Errorf("a bias must hold A's %s, as C must (not %s and %s)", elems[0], elems[3], elems[2])
		case len(shapes[3]) != 1 || (shapes[3][0] != ir.Dynamic && n != ir.Dynamic && shapes[3][0] != n):
			err = fmt.Errorf("the bias must be [N] = [%d], not %v", n, shapes[3])
		}
	}
	return err
}

// LibraryConv2DOp is the host-side convolution that a vendor library
// (cuDNN) computes: convert-loop-to-gpu's conv=cudnn lowering.
const LibraryConv2DOp = OpLibraryConv2D

// The properties of gpu.library_conv2d: strides, padding and dilations
// are each an array<i64> of the two spatial dimensions (height, width);
// direction is a ConvDirection.
const (
	ConvStridesAttr   = "strides"
	ConvPaddingAttr   = "padding" // on both sides of the dimension
	ConvDilationsAttr = "dilations"
	ConvDirectionAttr = "direction"
	// ConvLayoutAttr is "NHWC" for tensors stored channels last; absent,
	// they are NCHW.
	ConvLayoutAttr = "layout"
)

// ConvLayoutNHWC is the value of ConvLayoutAttr for channels last.
const ConvLayoutNHWC = "NHWC"

// ConvDirection is what gpu.library_conv2d computes, and so which of its
// operands it writes.
type ConvDirection string

// The directions of gpu.library_conv2d.
const (
	// ConvForward writes y from x and w (the default).
	ConvForward ConvDirection = "forward"
	// ConvBackwardData writes x, the gradient of the input, from w and y
	// (the gradient of the output).
	ConvBackwardData ConvDirection = "backward_data"
	// ConvBackwardFilter writes w, the gradient of the weight, from x and
	// y (the gradient of the output).
	ConvBackwardFilter ConvDirection = "backward_filter"
)

// Written returns the index of the operand (x 0, w 1, y 2) direction d
// writes.
func (d ConvDirection) Written() int {
	switch d {
	case ConvBackwardData:
		return 0
	case ConvBackwardFilter:
		return 1
	}
	return 2
}

var libraryConv2DDef = &ir.OpDef{
	Name:    LibraryConv2DOp,
	Summary: "A 2-D convolution, or one of its gradients, computed by a vendor library on the host's stream",
	Description: "With `direction` \"forward\" (or none) it writes y[n, o, i, j] = Σ x[n, c, i·sh - ph + a·dh, j·sw - pw + b·dw] · w[o, c, a, b] " +
		"into y, summed over the input channels c and the window (a, b), a term being 0 where the " +
		"window reaches past x (one group, no flip: PyTorch's conv2d). With \"backward_data\" it writes " +
		"into x the gradient of that convolution's input for the output's gradient held in y " +
		"(x[n, c, r, q] = Σ y[n, o, i, j]·w[o, c, a, b] over the terms where x[n, c, r, q] is read), and " +
		"with \"backward_filter\" into w the gradient of its weight (w[o, c, a, b] = Σ x[…]·y[n, o, i, j] over " +
		"n, i, j). x is [N, C, H, W], w " +
		"[O, C, KH, KW] and y [N, O, OH, OW] with OH = (H + 2·ph - dh·(KH-1) - 1)/sh + 1 (OW " +
		"likewise), all of one element type, bf16 or f16, with static shapes. Each product is exact " +
		"in f32, the sum is accumulated in f32 (in an order the library chooses) and rounded once to " +
		"the written operand's type. The padding is the same on both sides of a dimension. With `layout` \"NHWC\" " +
		"the tensors are stored channels last: x [N, H, W, C], w [O, KH, KW, C], y [N, OH, OW, O] (the same sums). It is a host op of the " +
		"launch plan, between kernel launches: the nvptx executor runs it with cuDNN on the plan's " +
		"stream, the interpreter sums in the order of the convolution nest it replaces. convert-loop-to-gpu " +
		"emits it for convolution nests with `conv=cudnn` (the nest's epilogue becomes a pointwise kernel " +
		"reading y), and backward_filter for a weight gradient's convolution of transposed copies.",
	Inherent: []string{ConvStridesAttr, ConvPaddingAttr, ConvDilationsAttr, ConvDirectionAttr, ConvLayoutAttr},
	Operands: []ir.ArgDoc{
		{Name: "x", Doc: "memref [N, C, H, W] ([N, H, W, C] with layout \"NHWC\")"},
		{Name: "w", Doc: "memref [O, C, KH, KW] ([O, KH, KW, C])"},
		{Name: "y", Doc: "memref [N, O, OH, OW] ([N, OH, OW, O])"},
	},
	Attrs: []ir.ArgDoc{
		{Name: ConvStridesAttr, Doc: "array<i64: sh, sw>, positive"},
		{Name: ConvPaddingAttr, Doc: "array<i64: ph, pw>, at least 0: zeros on both sides"},
		{Name: ConvDilationsAttr, Doc: "array<i64: dh, dw>, positive"},
		{Name: ConvDirectionAttr, Doc: "\"forward\" (the default: writes y), \"backward_data\" (writes x) or \"backward_filter\" (writes w)"},
		{Name: ConvLayoutAttr, Doc: "\"NHWC\" for tensors stored channels last; absent for NCHW"},
	},
	Example: `"gpu.library_conv2d"(%x, %w, %y) <{strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilations = array<i64: 1, 1>}> : (memref<8x64x56x56xbf16>, memref<64x64x3x3xbf16>, memref<8x64x56x56xbf16>) -> ()`,
	Verify:  verifyLibraryConv2D,
}

// ConvGeometry is gpu.library_conv2d's strides, padding and dilations,
// each (height, width), and its direction.
type ConvGeometry struct {
	Strides, Padding, Dilations [2]int64
	Direction                   ConvDirection
	// ChannelsLast: x, w and y are stored NHWC (ConvLayoutAttr).
	ChannelsLast bool
}

// ConvNCHW returns the shape of a gpu.library_conv2d operand in NCHW
// order: itself, or [d0, d3, d1, d2] for one stored channels last.
func (g ConvGeometry) ConvNCHW(shape []int64) []int64 {
	if !g.ChannelsLast || len(shape) != 4 {
		return shape
	}
	return []int64{shape[0], shape[3], shape[1], shape[2]}
}

// LibraryConv2D inserts gpu.library_conv2d computing g.Direction of the
// convolution of x by w into y.
func LibraryConv2D(b *ir.Builder, loc ir.Location, x, w, y *ir.Value, g ConvGeometry) *ir.Operation {
	attrs := []ir.NamedAttr{
		{Name: ConvStridesAttr, Value: ir.I64Array(g.Strides[:]...)},
		{Name: ConvPaddingAttr, Value: ir.I64Array(g.Padding[:]...)},
		{Name: ConvDilationsAttr, Value: ir.I64Array(g.Dilations[:]...)},
	}
	if g.Direction != "" && g.Direction != ConvForward {
		attrs = append(attrs, ir.NamedAttr{Name: ConvDirectionAttr, Value: ir.StringAttr{Value: string(g.Direction)}})
	}
	if g.ChannelsLast {
		attrs = append(attrs, ir.NamedAttr{Name: ConvLayoutAttr, Value: ir.StringAttr{Value: ConvLayoutNHWC}})
	}
	return b.Op(LibraryConv2DOp, loc, []*ir.Value{x, w, y}, nil, attrs...)
}

// LibraryConvGeometry returns gpu.library_conv2d's properties (the
// direction ConvForward when it has none), or an error naming the one
// that is missing or out of range.
func LibraryConvGeometry(op *ir.Operation) (ConvGeometry, error) {
	var g ConvGeometry
	for _, f := range []struct {
		name string
		dst  *[2]int64
		min  int64
	}{{ConvStridesAttr, &g.Strides, 1}, {ConvPaddingAttr, &g.Padding, 0}, {ConvDilationsAttr, &g.Dilations, 1}} {
		a, ok := op.Attr(f.name).(ir.DenseArrayAttr)
		if !ok || a.Elem != ir.I64 || len(a.Values) != 2 {
			return g, fmt.Errorf("'%s' must be an array<i64> of two values (height, width)", f.name)
		}
		if a.Values[0] < f.min || a.Values[1] < f.min {
			return g, fmt.Errorf("'%s' must be at least %d, not %v", f.name, f.min, a.Values)
		}
		copy(f.dst[:], a.Values)
	}
	g.Direction = ConvForward
	if a := op.Attr(ConvDirectionAttr); a != nil {
		d, ok := a.(ir.StringAttr)
		switch {
		case !ok:
			return g, fmt.Errorf("'%s' must be a string", ConvDirectionAttr)
		case ConvDirection(d.Value) != ConvForward && ConvDirection(d.Value) != ConvBackwardData && ConvDirection(d.Value) != ConvBackwardFilter:
			return g, fmt.Errorf("'%s' must be %q, %q or %q, not %q", ConvDirectionAttr, ConvForward, ConvBackwardData, ConvBackwardFilter, d.Value)
		}
		g.Direction = ConvDirection(d.Value)
	}
	if a := op.Attr(ConvLayoutAttr); a != nil {
		if l, ok := a.(ir.StringAttr); !ok || l.Value != ConvLayoutNHWC {
			return g, fmt.Errorf("'%s' must be %q (or absent for NCHW), not %s", ConvLayoutAttr, ConvLayoutNHWC, a)
		}
		g.ChannelsLast = true
	}
	return g, nil
}

// ConvOutSize is the output extent of a convolution along one dimension
// of input extent in, window k, padding p on both sides, stride s and
// dilation d (at most 0 when the window does not fit).
func ConvOutSize(in, k, p, s, d int64) int64 {
	span := in + 2*p - d*(k-1) - 1
	if span < 0 {
		return 0
	}
	return span/s + 1
}

func verifyLibraryConv2D(op *ir.Operation) error {
	if op.ParentOfType(FuncOp) != nil {
		return fmt.Errorf("is a host op: it cannot be nested in a '%s'", FuncOp)
	}
	if op.NumOperands() != 3 || op.NumResults() != 0 {
		return fmt.Errorf("expects three memref operands (x, w, y) and no results")
	}
	g, err := LibraryConvGeometry(op)
	if err != nil {
		return err
	}
	var shapes [3][]int64
	for i, v := range op.Operands() {
		mt, ok := v.Type().(*ir.MemRefType)
		if !ok || !mt.Ranked() || mt.Layout != nil || mt.MemorySpace != nil || len(mt.Shape()) != 4 {
			return fmt.Errorf("operand #%d must be a 4-D memref of global memory with the identity layout, not %s", i, v.Type())
		}
		if e := mt.ElementType(); e != ir.BF16 && e != ir.F16 {
			return fmt.Errorf("operand #%d must hold bf16 or f16, not %s", i, e)
		}
		if e0 := ir.ElementTypeOf(op.Operand(0).Type()); mt.ElementType() != e0 {
			return fmt.Errorf("operand #%d must hold x's %s, not %s", i, e0, mt.ElementType())
		}
		shapes[i] = mt.Shape()
		for _, e := range shapes[i] {
			if e < 1 {
				return fmt.Errorf("operand #%d must have a static shape of positive extents, not %s", i, v.Type())
			}
		}
	}
	x, w, y := g.ConvNCHW(shapes[0]), g.ConvNCHW(shapes[1]), g.ConvNCHW(shapes[2])
	if w[1] != x[1] {
		return fmt.Errorf("w has %d input channels and x %d", w[1], x[1])
	}
	want := []int64{x[0], w[0], ConvOutSize(x[2], w[2], g.Padding[0], g.Strides[0], g.Dilations[0]),
		ConvOutSize(x[3], w[3], g.Padding[1], g.Strides[1], g.Dilations[1])}
	if want[2] < 1 || want[3] < 1 {
		return fmt.Errorf("the window [%d, %d] (dilated) does not fit in x's padded [%d, %d]", w[2], w[3], x[2]+2*g.Padding[0], x[3]+2*g.Padding[1])
	}
	for d := range 4 {
		if y[d] != want[d] {
			return fmt.Errorf("y must be %v, not %v", want, y)
		}
	}
	return nil
}
