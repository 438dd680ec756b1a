package togpu

import (
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/lower"
)

// mapping is how one nest runs on the GPU.
type mapping interface {
	// emit builds the kernel body at b (the kernel's entry block, after
	// its constants), mapping the nest's values through k.m.
	emit(k *kernelGen, b *ir.Builder) error
	// grid returns the number of blocks, computed on the host from the
	// nest's extents.
	grid(b *ir.Builder, loc ir.Location, exts []*ir.Value, cfg Config) *ir.Value
	block(cfg Config) int64
	mapping() string
	rowsPerBlock() int64
	vector() int64
}

// analyze picks the mapping of a nest: a scatter_add's its own (scatter.go), row when its body is a sequence of
// row-level ops and inner loops over the row that threads can share,
// pointwise otherwise (always correct: each thread runs the whole body for
// its points). Sibling loops over the same range are merged first
// (mergeRowLoops), and for the pointwise mapping also loops that store
// (mergeStoreLoops).
func analyze(ctx *ir.Context, nest *ir.Operation, cfg Config) (mapping, error) {
	if loop.NestKind(nest) == lower.ScatterNest {
		// Threads must not share a scatter's columns (rows, merged
		// loops): atomics (f32) or a thread per column.
		if m := scatterPlan(nest); m != nil {
			return m, nil
		}
		return pointwisePlan(nest, cfg), nil
	}
	if m := mmaPlan(nest, cfg.mmaTile()); m != nil && cfg.TensorCores {
		return m, nil
	}
	if m := convPlan(nest, cfg.mmaTile()); m != nil && cfg.TensorCores {
		return m, nil
	}
	mergeRowLoops(ctx, loop.Body(nest))
	if r := rowPlan(nest, cfg); r != nil {
		return r, nil
	}
	mergeStoreLoops(ctx, loop.Body(nest))
	return pointwisePlan(nest, cfg), nil
}

// dependsOn reports whether v is computed (inside nest) from any of ivs.
func dependsOn(v *ir.Value, ivs map[*ir.Value]bool, nest *ir.Operation, memo map[*ir.Value]bool) bool {
	if d, ok := memo[v]; ok {
		return d
	}
	memo[v] = false
	res := ivs[v]
	if !res && v.DefiningOp() != nil && definedIn(v, nest) {
		for _, o := range v.DefiningOp().Operands() {
			if dependsOn(o, ivs, nest, memo) {
				res = true
				break
			}
		}
	}
	memo[v] = res
	return res
}

// accessIndices returns the memref and the indices of a load or store.
func accessIndices(o *ir.Operation) (*ir.Value, []*ir.Value) {
	if o.Name() == loop.StoreOp {
		return o.Operand(1), o.Operands()[2:]
	}
	return o.Operand(0), o.Operands()[1:]
}

// staticInt returns the value of an index constant.
func staticInt(v *ir.Value) (int64, bool) {
	if !isConstant(v) {
		return 0, false
	}
	a, ok := v.DefiningOp().Attr("value").(ir.IntegerAttr)
	return a.Value, ok
}
