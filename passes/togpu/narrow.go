package togpu

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// NarrowPerBlock is the most elements of one of its buffers a SIMT kernel
// may have per block (NarrowLaunches): more is a grid too small for its
// data. A row of GPT-2's logits is 50304 elements; a gather's table
// counts whole though the kernel reads a few rows of it.
const NarrowPerBlock = 1 << 16

// NarrowLaunches returns the SIMT kernels (the pointwise and row mappings)
// that module, at the gpu level, launches with NarrowPerBlock or more
// elements of a buffer a block, or on a grid that is not a constant, each
// as "kernel: elements on blocks", for tests of what a model lowers to. A
// reduction that keeps few elements but folds many ran so before
// graph-split-reductions: GPT-2's training loss on one thread, batch
// norm's statistics on one block.
func NarrowLaunches(module *ir.Operation) []string {
	mapping := map[string]string{}
	module.Walk(func(op *ir.Operation) bool {
		if op.Name() == gpu.FuncOp {
			if d, ok := op.Attr(LaunchAttr).(ir.DictAttr); ok {
				if m, ok := d.Get("mapping").(ir.StringAttr); ok {
					mapping[ir.SymbolName(op)] = m.Value
				}
			}
			return false
		}
		return true
	})
	var out []string
	module.Walk(func(op *ir.Operation) bool {
		l, ok := gpu.LaunchOf(op)
		if !ok {
			return true
		}
		name := l.Kernel.Root
		if n := len(l.Kernel.Nested); n > 0 {
			name = l.Kernel.Nested[n-1]
		}
		if m := mapping[name]; m != MappingPointwise && m != MappingRow {
			return true
		}
		var most int64
		for _, v := range l.Args {
			if mt, ok := v.Type().(*ir.MemRefType); ok {
				most = max(most, ir.NumElements(mt.Shape()))
			}
		}
		blocks := int64(1)
		for _, g := range l.Grid {
			var v ir.IntegerAttr
			ok := false
			if c := g.DefiningOp(); c != nil && c.Name() == arith.OpConstant {
				v, ok = c.Attr("value").(ir.IntegerAttr)
			}
			if !ok {
				blocks = -1
				break
			}
			blocks *= v.Value
		}
		if blocks < 1 || most/blocks >= NarrowPerBlock {
			out = append(out, fmt.Sprintf("%s: %d elements on %d blocks", name, most, blocks))
		}
		return true
	})
	return out
}

// LaunchMappings counts the kernel launches of module, at the gpu level,
// by the mapping of the kernel each launches (its strata.launch mapping:
// pointwise, row, mma, flash), for tests of what a model's nests became:
// a kernel that gpu-dedup-kernels kept for several nests counts once a
// launch.
func LaunchMappings(module *ir.Operation) map[string]int {
	out := map[string]int{}
	module.Walk(func(op *ir.Operation) bool {
		if op.Name() == gpu.ModuleOp {
			return false
		}
		if op.Name() != gpu.LaunchFuncOp {
			return true
		}
		if k := gpu.LookupKernel(op); k != nil {
			if d, ok := k.Attr(LaunchAttr).(ir.DictAttr); ok {
				if m, ok := d.Get("mapping").(ir.StringAttr); ok {
					out[m.Value]++
				}
			}
		}
		return true
	})
	return out
}
