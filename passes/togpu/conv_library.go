package togpu

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
)

// The values of convert-loop-to-gpu's conv option.
const (
	// ConvMMA runs convolution nests as Strata's own implicit-GEMM
	// kernels with their epilogue fused (conv_mma.go), or SIMT.
	ConvMMA = "mma"
	// ConvCuDNN runs each convolution nest as a gpu.library_conv2d that
	// cuDNN computes, followed by the nest's epilogue (batch-norm affine,
	// residual add, activation) as one pointwise kernel reading the
	// convolution, as Inductor runs ATen's convolution and its own
	// pointwise kernel after it.
	ConvCuDNN = "cudnn"
)

// convOptions are the values of the conv option, the default first.
var convOptions = []string{ConvMMA, ConvCuDNN}

// libraryConv is a convolution nest (loop.ConvAttr) that one
// gpu.library_conv2d computes: x [N, C, H, W] and w [O, C, KH, KW] bf16 or
// f16 buffers of static shape, padding alike on both sides, and the sum
// rounded to the operands' type before anything else reads it.
type libraryConv struct {
	nest, kloop *ir.Operation
	round       *ir.Operation // the sum's rounding, the epilogue's first op
	x, w        *ir.Value
	elem        ir.Type
	shape       []int64 // of the output: [N, O, OH, OW], the nest's extents
	geo         gpu.ConvGeometry
}

// convLibraryPlan recognizes a nest that gpu.library_conv2d can compute.
// It returns nil and why not for a convolution nest the library cannot
// take, and nil and "" for a nest that is no convolution nest.
func convLibraryPlan(nest *ir.Operation) (*libraryConv, string) {
	geo, ok := loop.ConvOf(nest)
	if !ok || loop.NestKind(nest) != "conv2d" {
		return nil, ""
	}
	// convPlan checks the nest's structure: one K loop summing x·w of
	// buffers in f32 from 0 over static extents.
	m := convPlan(nest, DefaultConfig.MMATile)
	if m == nil {
		return nil, "the nest is not one sum of products of two buffers over static extents"
	}
	if geo.Padding[0] != geo.Padding[2] || geo.Padding[1] != geo.Padding[3] {
		return nil, fmt.Sprintf("padding (top, left, bottom, right) %v differs between the sides of a dimension (cuDNN pads both alike)", geo.Padding)
	}
	sum := m.kloop.Result(0)
	if !sum.HasOneUse() || sum.Users()[0].Name() != arith.OpTruncF || sum.Users()[0].Result(0).Type() != m.elem {
		return nil, fmt.Sprintf("the f32 sum is not rounded to %s before the epilogue reads it (a bias added inside the convolution)", m.elem)
	}
	lbs, ubs, _, _, _ := loop.ParallelBounds(nest)
	shape := make([]int64, len(lbs))
	for d := range ubs {
		shape[d], _ = staticInt(ubs[d]) // convPlan checked they are static
	}
	return &libraryConv{nest: nest, kloop: m.kloop, round: sum.Users()[0], x: m.b.mem, w: m.a.mem, elem: m.elem, shape: shape,
		geo: gpu.ConvGeometry{Strides: geo.Strides, Padding: [2]int64{geo.Padding[0], geo.Padding[1]}, Dilations: geo.Dilations}}, ""
}

// lowerLibraryConvs replaces every library-computable convolution nest
// of fn by a gpu.library_conv2d and the nest's epilogue reading its
// output. When the epilogue only stores the rounded sum into a buffer of
// the output's shape, the library writes that buffer and the nest
// disappears; otherwise the output is a new buffer, freed after the
// nest, and the nest becomes a pointwise one. A convolution nest the
// library cannot take stays on Strata's kernels, with the reason under
// STRATA_LOGS=perf_hints.
func lowerLibraryConvs(ctx *ir.Context, fn *ir.Operation) {
	for _, nest := range topLevelNests(fn) {
		p, why := convLibraryPlan(nest)
		if p != nil {
			p.lower(ctx)
		} else if why != "" {
			logs.Printf(perfHints, "%s", (&ir.Diagnostic{Loc: nest.Loc(), Severity: ir.SevRemark,
				Message: "convolution nest stays on Strata's kernels, not cuDNN: " + why}).Error())
		}
	}
}

func (p *libraryConv) lower(ctx *ir.Context) {
	loc := p.nest.Loc()
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(p.nest)
	if out := p.directStore(); out != nil {
		gpu.LibraryConv2D(b, loc, p.x, p.w, out, p.geo)
		p.nest.Erase()
		return
	}
	y := loop.Alloc(b, loc, ir.MemRefOf(p.shape, p.elem))
	gpu.LibraryConv2D(b, loc, p.x, p.w, y, p.geo)
	in := ir.NewBuilder(ctx)
	in.SetInsertionPointBefore(p.kloop)
	p.round.Result(0).ReplaceAllUsesWith(loop.Load(in, loc, y, loop.Body(p.nest).Arguments()...))
	p.round.Erase()
	p.kloop.Erase()
	// What is left is the epilogue: a pointwise nest.
	p.nest.SetAttr(loop.ConvAttr, nil)
	p.nest.SetAttr(loop.NestKindAttr, ir.StringAttr{Value: "pointwise"})
	b.SetInsertionPointAfter(p.nest)
	loop.Dealloc(b, loc, y)
}

// directStore returns the buffer the nest stores the rounded sum into at
// (n, o, i, j) when that is all the nest does besides pure arithmetic
// (constants, the K loop's window origin), or nil.
func (p *libraryConv) directStore() *ir.Value {
	r := p.round.Result(0)
	if !r.HasOneUse() {
		return nil
	}
	st := r.Users()[0]
	body := loop.Body(p.nest)
	if st.Name() != loop.StoreOp || st.Operand(0) != r || definedIn(st.Operand(1), p.nest) ||
		!slices.Equal(st.Operands()[2:], body.Arguments()) {
		return nil
	}
	out := st.Operand(1)
	if mt, _ := out.Type().(*ir.MemRefType); mt == nil || !slices.Equal(mt.Shape(), p.shape) || mt.ElementType() != p.elem {
		return nil
	}
	for _, o := range body.Ops() {
		if o == p.kloop || o == p.round || o == st || o.HasTrait(ir.Terminator) || o.Name() == loop.ReduceOp {
			continue
		}
		// Constants and the index arithmetic of the window's origin,
		// which only the K loop reads: nothing else the store needs.
		if !o.HasTrait(ir.Pure) || o.NumRegions() > 0 {
			return nil
		}
	}
	return out
}
