// Package strengthreduce is an out-of-tree Strata pass, the subject of
// docs/tutorials/custom-pass.md: it rewrites multiplications by a power of
// two into left shifts,
//
//	%y = arith.muli %x, %c8 : i32   →   %y = arith.shli %x, %c3 : i32
//
// Importing the package registers the pass as "strength-reduce".
package strengthreduce

import (
	"math/bits"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "strength-reduce",
		Summary: "Rewrite multiplications by powers of two as shifts",
		Description: "Replaces arith.muli x, 2^k (constant on either side, 0 < k < width) by " +
			"arith.shli x, k. Wrapping multiplication and left shift agree bit for bit, so the " +
			"rewrite is exact for every value of x.",
		Anchor: funcs.OpFunc,
		Options: []passes.OptionDef{
			{Name: "min-shift", Type: passes.Int, Default: 1,
				Doc: "Only rewrite multiplications by 2^k with k at least this"},
		},
		New: func(opts passes.Options) (passes.Pass, error) {
			return &pass{minShift: int(opts.Int("min-shift"))}, nil
		},
	})
}

type pass struct{ minShift int }

func (*pass) Name() string { return "strength-reduce" }

// Run applies the rewrite with the greedy driver, which also revisits ops
// whose operands changed. Folding is off: the pass does one thing.
func (p *pass) Run(fn *ir.Operation, st *passes.State) error {
	cfg := ir.DefaultGreedyConfig()
	cfg.Context = st.Ctx
	cfg.EnableFolding = false
	cfg.Log = st.DebugRewrites
	rewrites := st.Stat("num-rewritten", "Number of multiplications turned into shifts")
	pattern := &ir.Pattern{
		Name: "muli-pow2-to-shli",
		Root: arith.OpMulI,
		Rewrite: func(r *ir.Rewriter, op *ir.Operation) bool {
			x, k, ok := p.match(op)
			if !ok {
				return false
			}
			r.SetInsertionPointBefore(op)
			shift := arith.ConstantInt(&r.Builder, op.Loc(), int64(k), x.Type())
			y := arith.Binary(&r.Builder, arith.OpShLI, op.Loc(), x, shift)
			r.ReplaceOp(op, []*ir.Value{y})
			rewrites.Add(1)
			return true
		},
	}
	changed, err := ir.ApplyPatternsGreedily(fn, []*ir.Pattern{pattern}, cfg)
	if !changed {
		st.MarkUnchanged()
	}
	return err
}

// match returns the non-constant operand x and k when op multiplies x by
// the constant 2^k with minShift <= k < width.
func (p *pass) match(op *ir.Operation) (*ir.Value, int, bool) {
	for i := range 2 {
		x, c := op.Operand(1-i), op.Operand(i)
		def := c.DefiningOp()
		if def == nil || def.Name() != arith.OpConstant {
			continue
		}
		a, ok := def.Attr("value").(ir.IntegerAttr)
		if !ok {
			continue
		}
		width := ir.IntWidth(x.Type())
		v := uint64(a.Value)
		if width < 64 {
			v &= 1<<width - 1 // the constant's bits as the type holds them
		}
		if v == 0 || v&(v-1) != 0 {
			continue
		}
		k := bits.TrailingZeros64(v)
		if k >= p.minShift && k < width {
			return x, k, true
		}
	}
	return nil, 0, false
}
