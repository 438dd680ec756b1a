package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// Dynamic shared memory. A kernel's workgroup buffers normally become
// static shared arrays, which ptxas caps at MaxStaticSharedBytes a kernel.
// A kernel whose buffers add up to more keeps them all in one dynamic
// shared array instead (the backends carve buffer i out of it at
// SharedLayout's offset i), and every launch of it must pass at least
// that many bytes as dynamic_shared_memory_size (the verifier checks a
// constant operand; DynamicSharedSize builds it). Nothing changes at the
// gpu level: the buffers stay workgroup attributions, so the interpreter
// runs such kernels as any other.

// MaxStaticSharedBytes is the static shared memory a kernel may declare
// (48 KiB on every architecture; more must be dynamic and opted into by
// the runtime).
const MaxStaticSharedBytes = 48 << 10

// MaxSharedBytes is the most shared memory a block may have on sm_90
// (227 KiB), static and dynamic together.
const MaxSharedBytes = 227 << 10

// SharedAlign is the alignment of each workgroup buffer in dynamic shared
// memory: 16 bytes, for cp.async, ldmatrix and 16-byte vector accesses.
const SharedAlign = 16

// SharedLayout returns the byte offset of each workgroup buffer of the
// gpu.func fn when they are laid out in order in one array, each aligned
// to SharedAlign, and the array's size.
func SharedLayout(fn *ir.Operation) (offsets []int64, total int64, err error) {
	for i, buf := range WorkgroupBuffers(fn) {
		mt, ok := buf.Type().(*ir.MemRefType)
		if !ok || !mt.Ranked() || ir.NumElements(mt.Shape()) < 0 {
			return nil, 0, fmt.Errorf("workgroup buffer %d has type %s, not a memref of static shape", i, buf.Type())
		}
		size, err := elemBytes(mt.ElementType())
		if err != nil {
			return nil, 0, fmt.Errorf("workgroup buffer %d: %w", i, err)
		}
		total = (total + SharedAlign - 1) / SharedAlign * SharedAlign
		offsets = append(offsets, total)
		total += ir.NumElements(mt.Shape()) * size
	}
	return offsets, total, nil
}

// elemBytes is the storage size of a memref element: i1 takes a byte,
// index eight.
func elemBytes(t ir.Type) (int64, error) {
	switch t := t.(type) {
	case *ir.IndexType:
		return 8, nil
	case *ir.IntegerType:
		return int64(t.Width+7) / 8, nil
	case *ir.FloatType:
		return int64(t.Width+7) / 8, nil
	}
	return 0, fmt.Errorf("element type %s has no size in memory", t)
}

// DynamicSharedBytes returns the dynamic shared memory a launch of the
// gpu.func fn must pass: the size of its workgroup buffers when they
// exceed MaxStaticSharedBytes, else 0 (they are static). More than
// MaxSharedBytes is an error.
func DynamicSharedBytes(fn *ir.Operation) (int64, error) {
	_, total, err := SharedLayout(fn)
	switch {
	case err != nil || total <= MaxStaticSharedBytes:
		return 0, err
	case total > MaxSharedBytes:
		return 0, fmt.Errorf("%d bytes of workgroup memory, more than the %d a block may have", total, MaxSharedBytes)
	}
	return total, nil
}

// DynamicSharedSize inserts the i32 constant of the dynamic shared memory
// a launch of the gpu.func fn needs (see DynamicSharedBytes), or returns
// nil when its workgroup memory is static; pass the result to LaunchFunc
// once fn has all its workgroup buffers.
func DynamicSharedSize(b *ir.Builder, loc ir.Location, fn *ir.Operation) (*ir.Value, error) {
	n, err := DynamicSharedBytes(fn)
	if err != nil || n == 0 {
		return nil, err
	}
	return arith.ConstantInt(b, loc, n, ir.I32), nil
}
