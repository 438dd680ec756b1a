package togpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/sym"
)

// The graph-attention-to-flash pass and its other half in
// convert-loop-to-gpu. graph-decompose expands graph.attention into two
// products and a softmax before lowering, so the pass runs first, on the
// graph: each attention the kernel computes becomes a func.call of a
// private declaration tagged FlashAttr, which convert-graph-to-loop
// lowers like any call (buffers in, a buffer out) and convert-loop-to-gpu
// replaces by the kernel's launch (lowerFlashCalls). Without the pass
// nothing changes: it is off by default (see the pass's description for
// why), enabled by naming it before lower-to-gpu.
const (
	// FlashPassName is the pass's pipeline name.
	FlashPassName = "graph-attention-to-flash"
	// FlashAttr is the dictionary {causal, scale} (and lse, wgmma when
	// set) on the declarations standing for flash kernels.
	FlashAttr = "strata.flash"
	// FlashGradAttr is the dictionary {causal, scale} on the declarations
	// standing for the backward kernels (FlashGrad) of an attention.
	FlashGradAttr = "strata.flash_grad"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    FlashPassName,
		Summary: "Run bf16 and f16 graph.attention as one flash-attention kernel (before lower-to-gpu)",
		Description: "Each `graph.attention` without a mask operand, on static bf16 or f16 q, k, v with the same " +
			"batch dims (no broadcasting), a head dim that is a multiple of 16 up to 128 for q, k and v, and " +
			"a finite nonzero scale — or on q, k, v whose sequence length alone is dynamic, one symbolic size " +
			"(`#graph.dims`) for all three (a graph compiled for every length; the kernel takes the length " +
			"at run time and masks its tails) —, becomes a `func.call` of a private declaration tagged " +
			"`strata.flash = {causal, scale}`. convert-loop-to-gpu replaces each such call by the launch of " +
			"one kernel: blocks of 4 warps, 128 query rows (32 a warp) for non-causal attentions up to head " +
			"dim 64, else 64 (16 a warp; causal up to 64 with launch bounds for 4 blocks an SM and the row " +
			"sums on the tensor cores), K and V tiles of 64 keys double-buffered by " +
			"cp.async (one barrier per tile; workgroup memory beyond 48 KB is dynamic), scores and P·V on " +
			"mma.sync with f32 accumulators, online softmax in f32 with the scale folded into one fma before " +
			"each ex2 (the score matrix never reaches memory; only the causal diagonal and key-tail tiles are " +
			"masked). The results match graph.attention within the rounding of their element type, not bit for bit: the kernel " +
			"rounds the probabilities before rather than after the division by the row sum, so about half " +
			"the outputs differ from the decomposition's by an ulp (normwise-relative 8e-3 at 2x4x64x32). " +
			"That is why lower-to-gpu does not run it by default (its GPU results match the interpreter's " +
			"to 2e-4 on the end-to-end programs); the bench opts in. Other attentions are left to " +
			"graph-decompose. Use as `builtin.module(graph-attention-to-flash,lower-to-gpu)`. With `wgmma=true` " +
			"(the bench's GPU engine on sm_90 devices) attentions of head dim 64 and 128 take Hopper's warpgroup-MMA kernel " +
			"instead (WGMMATile; docs/lowering.md), compiled for sm_90a. Each " +
			"`graph.attention_grad` of the same shapes becomes two backward kernels (FlashGrad: dQ, which also " +
			"writes D = rowsum(dO∘O), then dK and dV over 32-query tiles; mma.sync, 64-row blocks; with `wgmma=true` " +
			"at head dims 64 and 128 every product on gpu.wgmma, one warpgroup a block) that read the " +
			"rows' log-sum-exp the forward kernel of its o writes (its declaration then has it as a second " +
			"result); a gradient whose o comes from elsewhere gets a forward kernel of its own for it. " +
			"A decoding step's masked attention — static bf16 or f16 q [..., 1, D] (one query a sequence), k and v " +
			"[..., Lk, D] with q's batch dims, D a multiple of 8 dividing 256 up to 128, an i1 mask [..., 1, Lk] " +
			"broadcast along batch dims, not causal — becomes a call tagged `strata.decode_attention = {scale}`, " +
			"which convert-loop-to-gpu replaces by one kernel (mapping `decode`): a warp a 32-key tile (8-element " +
			"rows a lane, f32 scores, online softmax in base 2, the product with v), " +
			"up to 32 warps a block combining theirs into the output row — or, past 1024 keys, a block's partial " +
			"each, which a second kernel combines. A tile whose mask " +
			"bits are all false is never read (a KV cache past its current length costs its mask bytes), so " +
			"non-finite keys or values there do not reach the result as they would graph.attention's 0·v; the " +
			"probabilities are rounded once, after the combination (within the element type's rounding of the " +
			"decomposition's).",
		Anchor: builtin.OpModule,
		Options: []passes.OptionDef{{Name: "wgmma", Type: passes.Bool, Default: false,
			Doc: "Hopper (sm_90a) kernels: attentions of head dim 64 and 128 take the wgmma tilings (WGMMATile), " +
				"and their gradients the wgmma backward kernels (FlashGrad.WGMMA), whose gpu.module then asks for " +
				"the sm_90a target (gpu.PTXTargetAttr)"}},
		Before: []passes.Order{
			{Pass: "graph-decompose", Reason: "graph-decompose expands graph.attention, leaving nothing to match"},
			{Pass: "convert-graph-to-loop", Reason: "it matches graph.attention, which convert-graph-to-loop replaces with loops"},
		},
		New: func(o passes.Options) (passes.Pass, error) { return flashPass{wgmma: o.Bool("wgmma")}, nil },
	})
}

type flashPass struct{ wgmma bool }

func (flashPass) Name() string { return FlashPassName }

// Run outlines every attention the kernel takes.
func (p flashPass) Run(module *ir.Operation, st *passes.State) error {
	n := OutlineAttention(st.Ctx, module, p.wgmma)
	st.Stat("flash-kernels", "attentions run as flash kernels").Add(int64(n))
	if n == 0 {
		st.MarkUnchanged()
	}
	return nil
}

// OutlineAttention replaces each graph.attention of module's functions that
// flashOf accepts by a call of a new declaration tagged FlashAttr, and
// each graph.attention_grad that flashGradOf accepts by a call of one
// tagged FlashGradAttr, and returns how many it replaced. A gradient
// whose o is the result of an outlined attention of the same q, k, v,
// scale and causality takes that kernel's log-sum-exp (the forward's
// declaration then has it as a second result); another gets a forward
// kernel of its own for it. With wgmma the attentions that the wgmma
// tiling (WGMMATile) computes, and the gradients that the wgmma backward
// kernels compute (DefaultFlashGrad), are marked for them.
func OutlineAttention(ctx *ir.Context, module *ir.Operation, wgmma bool) int {
	body := module.Region(0).Front()
	if body == nil {
		return 0
	}
	b := ir.NewBuilder(ctx)
	n := 0
	for _, fn := range body.Ops() {
		if fn.Name() != funcs.FuncOp || funcs.IsExternal(fn) {
			continue
		}
		var atts, grads, decodes []*ir.Operation
		fn.Walk(func(o *ir.Operation) bool {
			switch o.Name() {
			case graph.OpAttention:
				if _, ok := flashOf(o); ok {
					atts = append(atts, o)
				} else if _, ok := decodeOf(o); ok {
					decodes = append(decodes, o)
				}
			case graph.OpAttentionGrad:
				if _, ok := flashGradOf(o); ok {
					grads = append(grads, o)
				}
			}
			return true
		})
		fwdOf, wantLSE := map[*ir.Operation]*ir.Operation{}, map[*ir.Operation]bool{}
		for _, g := range grads {
			if a := g.Operand(3).DefiningOp(); a != nil && slices.Contains(atts, a) && pairs(a, g) {
				fwdOf[g], wantLSE[a] = a, true
			}
		}
		for _, d := range decodes {
			a, _ := decodeOf(d)
			outlineDecode(b, module, fn, d, a)
			n++
		}
		lse := map[*ir.Operation]*ir.Value{}
		for _, a := range atts {
			f, _ := flashOf(a)
			call := outlineFlash(b, module, fn, a, f, wgmma, wantLSE[a])
			a.Result(0).ReplaceAllUsesWith(call.Result(0))
			if wantLSE[a] {
				lse[a] = call.Result(1)
			}
			a.Erase()
			n++
		}
		for _, g := range grads {
			f, _ := flashGradOf(g)
			l := lse[fwdOf[g]]
			if l == nil {
				// (The forward kernel's o is left unused.)
				l = outlineFlash(b, module, fn, g, f.Flash, wgmma, true).Result(1)
			}
			b.SetInsertionPointBefore(fn)
			name := uniqueSymbol(module, symName(fn)+"_flash_grad")
			ins := append(valueTypes(g.Operands()), l.Type())
			decl := funcs.NewExternalFunc(b, name, ir.FunctionOf(ins, valueTypes(g.Results())), g.Loc())
			spec := []ir.NamedAttr{
				{Name: "causal", Value: ir.Bool(f.Causal)},
				{Name: "scale", Value: ir.Float(f.Scale, ir.F64)},
			}
			if DefaultFlashGrad(f.Flash, wgmma).WGMMA {
				spec = append(spec, ir.NamedAttr{Name: "wgmma", Value: ir.Bool(true)})
			}
			decl.SetAttr(FlashGradAttr, ir.Dict(spec...))
			b.SetInsertionPointBefore(g)
			call := funcs.Call(b, g.Loc(), name, valueTypes(g.Results()), append(g.Operands(), l)...)
			for i, r := range g.Results() {
				r.ReplaceAllUsesWith(call.Result(i))
			}
			g.Erase()
			n++
		}
	}
	return n
}

// outlineFlash inserts, before op, a call of a new declaration (before fn)
// tagged FlashAttr that computes f on op's first three operands: its
// result, of the type of op's first result, and with lse the rows'
// log-sum-exp (f32, op's batch dims and Lq) as a second result.
func outlineFlash(b *ir.Builder, module, fn, op *ir.Operation, f Flash, wgmma, lse bool) *ir.Operation {
	b.SetInsertionPointBefore(fn)
	name := uniqueSymbol(module, symName(fn)+"_flash")
	ins := valueTypes(op.Operands()[:3])
	outs := []ir.Type{op.Operand(0).Type()}
	if lse {
		q := op.Operand(0).Type().(*ir.TensorType).Shape()
		outs = append(outs, ir.TensorOf(slices.Clone(q[:len(q)-1]), ir.F32))
	}
	decl := funcs.NewExternalFunc(b, name, ir.FunctionOf(ins, outs), op.Loc())
	spec := []ir.NamedAttr{
		{Name: "causal", Value: ir.Bool(f.Causal)},
		{Name: "scale", Value: ir.Float(f.Scale, ir.F64)},
	}
	if lse {
		spec = append(spec, ir.NamedAttr{Name: "lse", Value: ir.Bool(true)})
	}
	if g := f; wgmma {
		g.LSE = lse
		if g.Tile = g.WGMMADefault(); g.Check() == nil {
			spec = append(spec, ir.NamedAttr{Name: "wgmma", Value: ir.Bool(true)})
		}
	}
	decl.SetAttr(FlashAttr, ir.Dict(spec...))
	b.SetInsertionPointBefore(op)
	return funcs.Call(b, op.Loc(), name, outs, op.Operands()[:3]...)
}

// valueTypes returns the types of vs.
func valueTypes(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type()
	}
	return ts
}

// pairs reports whether attention a computes the o of attention_grad g:
// the same q, k and v, scale and causality.
func pairs(a, g *ir.Operation) bool {
	fa, _ := flashOf(a)
	fg, _ := flashGradOf(g)
	return g.Operand(3) == a.Result(0) && slices.Equal(a.Operands(), g.Operands()[:3]) &&
		fa.Causal == fg.Causal && fa.Scale == fg.Scale
}

// flashGradOf returns the backward kernels computing the
// graph.attention_grad op, if any: the shapes flashOf takes, o and do of
// q's shape.
func flashGradOf(op *ir.Operation) (FlashGrad, bool) {
	if op.NumOperands() != 5 || op.NumResults() != 3 {
		return FlashGrad{}, false
	}
	q := op.Operand(0).Type()
	if op.Operand(3).Type() != q || op.Operand(4).Type() != q {
		return FlashGrad{}, false
	}
	f, ok := flashShape(op, op.Operands()[:3], op.Operand(0))
	fg := FlashGrad{Flash: f}
	return fg, ok && fg.Check() == nil
}

// flashOf returns the kernel computing the graph.attention op, if any.
func flashOf(op *ir.Operation) (Flash, bool) {
	if op.NumOperands() != 3 || op.NumResults() != 1 {
		return Flash{}, false // (a mask operand)
	}
	f, ok := flashShape(op, op.Operands(), op.Result(0))
	return f, ok && f.Check() == nil
}

// flashShape reads the attention shape of op (attention or
// attention_grad) from q, k, v (ops) and the result r: tensors of one
// element type, rank ≥ 2, the same batch dims, k and v of one shape, r of
// q's; and its scale and causality. Every size is static but the
// sequence length, which may be dynamic when it is one symbolic size
// (graph.DimsOf) for the queries and the keys (Flash.Dynamic).
func flashShape(op *ir.Operation, ops []*ir.Value, r *ir.Value) (Flash, bool) {
	var shapes [4][]int64
	var lens [4]sym.Expr // the sequence lengths' symbolic sizes
	var elem ir.Type
	for i, v := range append(slices.Clone(ops), r) {
		t, ok := v.Type().(*ir.TensorType)
		if !ok || !t.Ranked() || len(t.Shape()) < 2 || (elem != nil && t.ElementType() != elem) {
			return Flash{}, false
		}
		s := t.Shape()
		for d, n := range s {
			if n == ir.Dynamic && d != len(s)-2 {
				return Flash{}, false
			}
		}
		lens[i] = graph.DimsOf(t)[len(s)-2]
		elem, shapes[i] = t.ElementType(), s
	}
	q, k, v, res := shapes[0], shapes[1], shapes[2], shapes[3]
	nb := len(q) - 2
	if len(k) != len(q) || !slices.Equal(k, v) || !slices.Equal(q, res) || !slices.Equal(q[:nb], k[:nb]) || q[nb+1] != k[nb+1] {
		return Flash{}, false
	}
	dynamic := q[nb] == ir.Dynamic || k[nb] == ir.Dynamic
	if dynamic && (graph.IsUnknown(lens[0]) || !lens[0].Equal(lens[1]) || !lens[0].Equal(lens[2]) || !lens[0].Equal(lens[3])) {
		return Flash{}, false
	}
	batch := int64(1)
	for _, d := range q[:nb] {
		batch *= d
	}
	f := Flash{Batch: batch, Lq: q[nb], Lk: k[nb], D: q[nb+1], Elem: elem, Scale: 1 / math.Sqrt(float64(q[nb+1])), Dynamic: dynamic}
	if s, ok := op.Attr("scale").(ir.FloatAttr); ok {
		f.Scale = s.Value()
	}
	if c, ok := op.Attr("causal").(ir.IntegerAttr); ok {
		f.Causal = c.Value != 0
	}
	return f, true
}

// lowerFlashCalls replaces, in every function of module, each call of a
// declaration tagged FlashAttr (on buffers, after convert-graph-to-loop)
// by an output buffer and the flash kernel's launch, then erases the
// declarations.
func lowerFlashCalls(ctx *ir.Context, module *ir.Operation) error {
	body := module.Region(0).Front()
	if body == nil {
		return nil
	}
	var decls []*ir.Operation
	for _, fn := range body.Ops() {
		if fn.Name() == funcs.FuncOp && (fn.Attr(FlashAttr) != nil || fn.Attr(FlashGradAttr) != nil || fn.Attr(DecodeAttr) != nil) {
			decls = append(decls, fn)
		}
	}
	if len(decls) == 0 {
		return nil
	}
	b := ir.NewBuilder(ctx)
	for _, fn := range body.Ops() {
		if fn.Name() != funcs.FuncOp || funcs.IsExternal(fn) {
			continue
		}
		var calls []*ir.Operation
		fn.Walk(func(o *ir.Operation) bool {
			if o.Name() == funcs.CallOp {
				if ref, ok := o.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr); ok && slices.ContainsFunc(decls, func(d *ir.Operation) bool { return symName(d) == ref.Root }) {
					calls = append(calls, o)
				}
			}
			return true
		})
		if len(calls) == 0 {
			continue
		}
		gpu.MarkContainer(module)
		b.SetInsertionPointAfter(fn)
		gmod := gpu.NewModule(b, fn.Loc(), uniqueSymbol(module, symName(fn)+"_flash_kernels"))
		for i, call := range calls {
			lower, name := lowerFlashCall, fmt.Sprintf("flash_%d", i)
			switch decl := ir.LookupSymbol(module, call.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr)); {
			case decl.Attr(FlashGradAttr) != nil:
				lower = lowerFlashGradCall
			case decl.Attr(DecodeAttr) != nil:
				lower, name = lowerDecodeCall, fmt.Sprintf("decode_%d", i)
			}
			if err := lower(b, module, gmod, call, name); err != nil {
				return err
			}
		}
	}
	for _, d := range decls {
		d.Erase()
	}
	return nil
}

// lowerFlashCall replaces call by the launch of a new kernel name in gmod.
func lowerFlashCall(b *ir.Builder, module, gmod, call *ir.Operation, name string) error {
	loc := call.Loc()
	f, spec, err := flashCallShape(module, call, FlashAttr)
	if err != nil {
		return err
	}
	if l, ok := spec.Get("lse").(ir.IntegerAttr); ok && l.Value != 0 {
		f.LSE = true
	}
	if w, ok := spec.Get("wgmma").(ir.IntegerAttr); ok && w.Value != 0 {
		f.Tile = f.WGMMADefault()
		gmod.SetAttr(gpu.PTXTargetAttr, ir.Str(gpu.WGMMATarget))
	}
	gb := ir.NewBuilder(b.Ctx)
	gb.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	kernel, err := f.Kernel(gb, loc, name)
	if err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	b.SetInsertionPointBefore(call)
	var outs []*ir.Value
	for _, r := range call.Results() {
		// (A dynamic size is q's: the output has q's shape, the
		// log-sum-exp its leading dims.)
		t := r.Type().(*ir.MemRefType)
		var sizes []*ir.Value
		for d, n := range t.Shape() {
			if n == ir.Dynamic {
				sizes = append(sizes, loop.Dim(b, loc, call.Operand(0), d))
			}
		}
		outs = append(outs, loop.Alloc(b, loc, t, sizes...))
	}
	ts := f.ArgTypes()
	args := flatViews(b, loc, append(slices.Clone(call.Operands()), outs...), ts)
	if _, err := f.Launch(b, loc, kernel, gpu.KernelRef(symName(gmod), name), args[0], args[1], args[2], args[3], args[4:]...); err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	for i, r := range call.Results() {
		r.ReplaceAllUsesWith(outs[i])
	}
	call.Erase()
	return nil
}

// lowerFlashGradCall replaces call (q, k, v, o, do, lse → dq, dk, dv) by
// the launches of the backward kernels, named name+"_dq" and
// name+"_dkv", in gmod, with D in a buffer of its own.
func lowerFlashGradCall(b *ir.Builder, module, gmod, call *ir.Operation, name string) error {
	loc := call.Loc()
	f, spec, err := flashCallShape(module, call, FlashGradAttr)
	if err != nil {
		return err
	}
	w, _ := spec.Get("wgmma").(ir.IntegerAttr)
	fg := DefaultFlashGrad(f, w.Value != 0)
	if fg.WGMMA {
		gmod.SetAttr(gpu.PTXTargetAttr, ir.Str(gpu.WGMMATarget))
	}
	gb := ir.NewBuilder(b.Ctx)
	gb.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	kernels, err := fg.Kernels(gb, loc, name)
	if err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	b.SetInsertionPointBefore(call)
	var outs []*ir.Value
	for _, r := range call.Results() {
		outs = append(outs, loop.Alloc(b, loc, r.Type().(*ir.MemRefType)))
	}
	dqT, dkvT := fg.DQArgTypes(), fg.DKVArgTypes()
	dd := loop.Alloc(b, loc, dqT[7].(*ir.MemRefType))
	ops := call.Operands() // q, k, v, o, do, lse
	dqArgs := flatViews(b, loc, []*ir.Value{ops[0], ops[1], ops[2], ops[3], ops[4], ops[5], outs[0], dd}, dqT)
	dkvArgs := flatViews(b, loc, []*ir.Value{ops[0], ops[1], ops[2], ops[4], ops[5], dd, outs[1], outs[2]}, dkvT)
	ref := func(k string) ir.SymbolRefAttr { return gpu.KernelRef(symName(gmod), k) }
	if err := fg.Launch(b, loc, kernels, ref, dqArgs, dkvArgs); err != nil {
		return ir.Errorf(loc, "%s: %v", PassName, err)
	}
	for i, r := range call.Results() {
		r.ReplaceAllUsesWith(outs[i])
	}
	call.Erase()
	return nil
}

// flatViews returns 1-D views of vs as types ts (vs already of that type
// are kept).
func flatViews(b *ir.Builder, loc ir.Location, vs []*ir.Value, ts []ir.Type) []*ir.Value {
	out := make([]*ir.Value, len(vs))
	for i, v := range vs {
		if v.Type() == ts[i] {
			out[i] = v
			continue
		}
		out[i] = loop.View(b, loc, v, ts[i].(*ir.MemRefType))
	}
	return out
}

// flashCallShape reads the attention shape of a call (on buffers) of a
// declaration tagged attr: q, k and the first result give the sizes, the
// declaration's dictionary the scale and causality (it is returned).
func flashCallShape(module, call *ir.Operation, attr string) (Flash, ir.DictAttr, error) {
	loc := call.Loc()
	callee := ir.LookupSymbol(module, call.Attr(funcs.CalleeAttr).(ir.SymbolRefAttr))
	spec, _ := callee.Attr(attr).(ir.DictAttr)
	var shapes [2][]int64
	var elem ir.Type
	for i, v := range call.Operands()[:2] {
		t, ok := v.Type().(*ir.MemRefType)
		if !ok {
			return Flash{}, spec, ir.Errorf(loc, "%s: flash call operand %d is %s, want a static memref", PassName, i, v.Type())
		}
		elem, shapes[i] = t.ElementType(), t.Shape()
	}
	q, k := shapes[0], shapes[1]
	nb := len(q) - 2
	batch := int64(1)
	for _, d := range q[:nb] {
		batch *= d
	}
	// (graph-attention-to-flash outlined a dynamic length only as one
	// symbolic size of q and k.)
	f := Flash{Batch: batch, Lq: q[nb], Lk: k[nb], D: q[nb+1], Elem: elem, Dynamic: q[nb] == ir.Dynamic || k[nb] == ir.Dynamic}
	if slices.Contains(q[:nb], ir.Dynamic) || q[nb+1] == ir.Dynamic || f.Dynamic && q[nb] != k[nb] {
		return Flash{}, spec, ir.Errorf(loc, "%s: flash call on %s and %s: only the sequence length may be dynamic", PassName, call.Operand(0).Type(), call.Operand(1).Type())
	}
	if c, ok := spec.Get("causal").(ir.IntegerAttr); ok {
		f.Causal = c.Value != 0
	}
	if s, ok := spec.Get("scale").(ir.FloatAttr); ok {
		f.Scale = s.Value()
	}
	return f, spec, nil
}
