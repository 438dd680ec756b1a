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
	if !ok {
		return nil, fmt.Errorf("adds to %s, not to f32 elements", b)
	}
	vs := args[2:]
	if len(vs) == 2 && (off%2 != 0 || off+1 >= len(s)) {
		return nil, fmt.Errorf("adds two values at element %d of %s: not an even element with one after it", off, b)
	}
	add := make([]float32, len(vs))
	for i, v := range vs {
		t, ok := v.(*Tensor)
		if !ok || t.elem != ir.F32 || t.Len() != 1 {
			return nil, fmt.Errorf("adds %s: want an f32 scalar", v)
		}
		add[i] = t.data.([]float32)[0]
	}
	atomicMu.Lock()
	for i, a := range add {
		s[off+i] += a
	}
	atomicMu.Unlock()
	return nil, nil
}
