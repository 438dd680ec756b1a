package interp

import (
	"fmt"
	"sync"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// gpu.atomic_add: the threads of a block run concurrently (gpu.go), so
// the additions take a lock; they land in the order the threads reach it,
// as on the device in some order.
func init() {
	registerAll(map[string]Rule{gpu.AtomicAddOp: atomicAddRule})
}

// atomicMu serializes every gpu.atomic_add of the process (the simulation
// is not timed: one lock is enough).
var atomicMu sync.Mutex

func atomicAddRule(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
	b, off, err := access(args[:2])
	if err != nil {
		return nil, err
	}
	s, ok := b.data.([]float32)
	v, vok := args[2].(*Tensor)
	if !ok || !vok || v.elem != ir.F32 || v.Len() != 1 {
		return nil, fmt.Errorf("adds %s to %s: want an f32 scalar and f32 elements", args[2], b)
	}
	atomicMu.Lock()
	s[off] += v.data.([]float32)[0]
	atomicMu.Unlock()
	return nil, nil
}
