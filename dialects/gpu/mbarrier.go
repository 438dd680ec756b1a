package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// Asynchronous barriers (sm_80 on; Hopper's warp-specialized kernels):
// an mbarrier is a 64-bit word of workgroup memory that counts the
// arrivals of a phase. gpu.mbarrier_init sets how many arrivals complete
// a phase; gpu.mbarrier_arrive adds one; gpu.mbarrier_wait waits for the
// phase of a parity to complete, so that one group of threads (a
// producer) and another (the consumers) hand a buffer back and forth
// without a block-wide barrier. gpu.setmaxnreg moves registers between
// the warpgroups of a block of different roles.
const (
	MbarrierInitOp   = OpMbarrierInit
	MbarrierArriveOp = OpMbarrierArrive
	MbarrierWaitOp   = OpMbarrierWait
	SetMaxNRegOp     = OpSetMaxNReg
)

// Properties of gpu.setmaxnreg.
const (
	// RegsAttr is the register count a thread of the warpgroup gets.
	RegsAttr = "regs"
	// IncreaseAttr marks a gpu.setmaxnreg that raises the count (a unit
	// attribute; without it the count is lowered).
	IncreaseAttr = "increase"
)

// The range and granularity of gpu.setmaxnreg's count, as PTX's.
const (
	MinMaxNReg  = 24
	MaxMaxNReg  = 256
	MaxNRegStep = 8
)

var mbarrierOps = []*ir.OpDef{mbarrierInitDef, mbarrierArriveDef, mbarrierWaitDef, setMaxNRegDef}

var mbarrierInitDef = &ir.OpDef{
	Name:    MbarrierInitOp,
	Summary: "Initializes an asynchronous barrier in workgroup memory",
	Description: "As PTX `mbarrier.init.shared::cta.b64`: the i64 element `index` of the " +
		"workgroup buffer becomes an mbarrier in phase 0 whose phases complete after " +
		"`count` arrivals (1 to 2^20 − 1). One thread initializes it; a gpu.barrier must " +
		"follow before other threads use it.",
	Operands: []ir.ArgDoc{
		{Name: "bars, index", Doc: "1-D workgroup memref of i64 and the barrier's index"},
		{Name: "count", Doc: "i32: arrivals a phase"},
	},
	Example: `"gpu.mbarrier_init"(%bars, %i, %n) : (memref<8xi64, 3>, index, i32) -> ()`,
	Verify:  verifyMbarrier(3),
}

var mbarrierArriveDef = &ir.OpDef{
	Name:    MbarrierArriveOp,
	Summary: "Arrives at an asynchronous barrier",
	Description: "As PTX `mbarrier.arrive.shared::cta.b64` (release semantics at the " +
		"block's scope): counts one arrival of the current phase of the mbarrier at " +
		"`bars[index]`; the arrival that completes the count completes the phase, which " +
		"makes the writes that every arriving thread did before arriving visible to the " +
		"threads that wait for that phase.",
	Operands: []ir.ArgDoc{{Name: "bars, index", Doc: "1-D workgroup memref of i64 and the barrier's index"}},
	Example:  `"gpu.mbarrier_arrive"(%bars, %i) : (memref<8xi64, 3>, index) -> ()`,
	Verify:   verifyMbarrier(2),
}

var mbarrierWaitDef = &ir.OpDef{
	Name:    MbarrierWaitOp,
	Summary: "Waits for a phase of an asynchronous barrier to complete",
	Description: "As a loop of PTX `mbarrier.try_wait.parity.shared::cta.b64` (acquire " +
		"semantics at the block's scope): returns once the phase of parity `parity` (0 " +
		"or 1) of the mbarrier at `bars[index]` has completed, i.e. as soon as the " +
		"barrier's current phase has the other parity. On a barrier in phase 0 a wait " +
		"for parity 1 returns at once (the phase before counts as complete), so a " +
		"producer that waits for a buffer to be free with parity (round + 1) % 2 passes " +
		"its first round. Waiters must not fall two phases behind.",
	Operands: []ir.ArgDoc{
		{Name: "bars, index", Doc: "1-D workgroup memref of i64 and the barrier's index"},
		{Name: "parity", Doc: "i32: 0 or 1"},
	},
	Example: `"gpu.mbarrier_wait"(%bars, %i, %p) : (memref<8xi64, 3>, index, i32) -> ()`,
	Verify:  verifyMbarrier(3),
}

var setMaxNRegDef = &ir.OpDef{
	Name:    SetMaxNRegOp,
	Summary: "Changes the register count of the warpgroup's threads (sm_90a)",
	Description: "As PTX `setmaxnreg.{inc,dec}.sync.aligned.u32 regs`: every thread of the " +
		"executing warpgroup (warps 4q to 4q+3, all of which must execute it together) " +
		"gets `regs` registers, a multiple of 8 from 24 to 256, more than it had with " +
		"`increase`, fewer without. ptxas applies it only in a kernel whose register " +
		"count is capped at entry (its block size known: `nvvm.maxntid`), so that a " +
		"producer warpgroup can give its registers to consumer warpgroups. The kernel " +
		"needs the sm_90a target. (The interpreter checks that the whole warpgroup " +
		"executes it, and otherwise ignores it.)",
	Inherent: []string{RegsAttr, IncreaseAttr},
	Attrs: []ir.ArgDoc{
		{Name: "regs", Doc: "registers a thread, a multiple of 8 from 24 to 256 (i64)"},
		{Name: "increase", Doc: "present when the count is raised (UnitAttr)"},
	},
	Example: `"gpu.setmaxnreg"() <{increase, regs = 232 : i64}> : () -> ()`,
	Verify:  verifySetMaxNReg,
}

// MbarrierInit inserts gpu.mbarrier_init of bars[index] for count (an i32)
// arrivals a phase.
func MbarrierInit(b *ir.Builder, loc ir.Location, bars, index, count *ir.Value) *ir.Operation {
	return b.Op(MbarrierInitOp, loc, []*ir.Value{bars, index, count}, nil)
}

// MbarrierArrive inserts gpu.mbarrier_arrive at bars[index].
func MbarrierArrive(b *ir.Builder, loc ir.Location, bars, index *ir.Value) *ir.Operation {
	return b.Op(MbarrierArriveOp, loc, []*ir.Value{bars, index}, nil)
}

// MbarrierWait inserts gpu.mbarrier_wait for the phase of parity (an i32)
// of bars[index].
func MbarrierWait(b *ir.Builder, loc ir.Location, bars, index, parity *ir.Value) *ir.Operation {
	return b.Op(MbarrierWaitOp, loc, []*ir.Value{bars, index, parity}, nil)
}

// SetMaxNReg inserts gpu.setmaxnreg giving the warpgroup's threads regs
// registers, more than before when increase.
func SetMaxNReg(b *ir.Builder, loc ir.Location, regs int64, increase bool) *ir.Operation {
	props := []ir.NamedAttr{{Name: RegsAttr, Value: ir.Int(regs, ir.I64)}}
	if increase {
		props = append(props, ir.NamedAttr{Name: IncreaseAttr, Value: ir.UnitAttr{}})
	}
	return b.Op(SetMaxNRegOp, loc, nil, nil, props...)
}

// Increases reports whether a gpu.setmaxnreg raises the register count.
func Increases(op *ir.Operation) bool {
	_, ok := op.Attr(IncreaseAttr).(ir.UnitAttr)
	return ok
}

// verifyMbarrier checks an mbarrier op of n operands: a 1-D workgroup
// memref of i64, an index, and (n = 3) an i32.
func verifyMbarrier(n int) func(op *ir.Operation) error {
	return func(op *ir.Operation) error {
		if err := inKernel(op); err != nil {
			return err
		}
		if op.NumOperands() != n || op.NumResults() != 0 {
			return fmt.Errorf("expects %d operands and no results, not %d and %d", n, op.NumOperands(), op.NumResults())
		}
		elem, err := workgroup1D(op.Operand(0), "the barriers", true)
		if err != nil {
			return err
		}
		if elem != ir.I64 {
			return fmt.Errorf("the barriers must be i64 words, not %s", elem)
		}
		if t := op.Operand(1).Type(); t != ir.Index {
			return fmt.Errorf("operand #1 must be index, not %s", t)
		}
		if n == 3 && op.Operand(2).Type() != ir.I32 {
			return fmt.Errorf("operand #2 must be i32, not %s", op.Operand(2).Type())
		}
		return nil
	}
}

func verifySetMaxNReg(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	r := IntProp(op, RegsAttr, 0)
	if r < MinMaxNReg || r > MaxMaxNReg || r%MaxNRegStep != 0 {
		return fmt.Errorf("requires '%s' to be a multiple of %d from %d to %d, not %d", RegsAttr, MaxNRegStep, MinMaxNReg, MaxMaxNReg, r)
	}
	if a := op.Attr(IncreaseAttr); a != nil {
		if _, ok := a.(ir.UnitAttr); !ok {
			return fmt.Errorf("requires '%s' to be a unit attribute", IncreaseAttr)
		}
	}
	return nil
}
