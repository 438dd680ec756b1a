package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// kernelParams is the kernelParams argument of cuLaunchKernel: one pointer
// per kernel parameter, each to that parameter's value. The driver copies
// the values at launch, so they need to live only for the call; the
// blocks are pooled, so that a launch allocates none.
type kernelParams struct {
	slots []uint64         // one 8-byte, 8-aligned slot per argument holds its value
	ptrs  []unsafe.Pointer // ptrs[i] points at slots[i]
	sizes []int            // the parameter's size in bytes, for tests and messages
}

// paramsPool holds parameter blocks between launches.
var paramsPool = sync.Pool{New: func() any { return new(kernelParams) }}

// packParams marshals Go values per the kernel ABI of docs/lowering.md:
//
//	DevicePtr (memref)          .u64
//	int, int64, uint64 (index)  .u64 / .s64
//	int32, uint32               .u32 / .s32
//	int16, uint16 (f16, bf16)   .b16
//	int8, uint8, bool (i1)      .u8
//	float32, float64            .f32 / .f64
//	tensorMapImage              .align 64 .b8 [128] (Launch encodes a TensorMapArg)
//
// Each value is stored little-endian at the start of its own slot; the
// parameter's width decides how many bytes the driver reads. The caller
// releases the block after the launch.
func packParams(args []any) (*kernelParams, error) {
	p := paramsPool.Get().(*kernelParams)
	n := len(args)
	if cap(p.slots) < n {
		p.slots = make([]uint64, n)
		p.ptrs = make([]unsafe.Pointer, n)
		p.sizes = make([]int, n)
	}
	p.slots, p.ptrs, p.sizes = p.slots[:n], p.ptrs[:n], p.sizes[:n]
	for i, a := range args {
		var bits uint64
		size := 8
		switch v := a.(type) {
		case DevicePtr:
			bits = uint64(v)
		case int:
			bits = uint64(int64(v))
		case int64:
			bits = uint64(v)
		case uint64:
			bits = v
		case int32:
			bits, size = uint64(uint32(v)), 4
		case uint32:
			bits, size = uint64(v), 4
		case int16:
			bits, size = uint64(uint16(v)), 2
		case uint16:
			bits, size = uint64(v), 2
		case int8:
			bits, size = uint64(uint8(v)), 1
		case uint8:
			bits, size = uint64(v), 1
		case bool:
			size = 1
			if v {
				bits = 1
			}
		case float32:
			bits, size = uint64(math.Float32bits(v)), 4
		case float64:
			bits = math.Float64bits(v)
		case tensorMapImage: // the parameter is the map's 128 bytes (tensormap.go)
			p.ptrs[i] = unsafe.Pointer(v.b)
			p.sizes[i] = TensorMapBytes
			continue
		default:
			p.release()
			return nil, fmt.Errorf("cuda: kernel argument %d: unsupported type %T", i, a)
		}
		// Write the bytes rather than the integer so the image is
		// little-endian whatever the host: the slot's first size bytes are
		// the value.
		binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Pointer(&p.slots[i])), 8), bits)
		p.ptrs[i] = unsafe.Pointer(&p.slots[i])
		p.sizes[i] = size
	}
	return p, nil
}

// release returns the block to the pool; it must not be used afterwards.
func (p *kernelParams) release() {
	clear(p.ptrs) // no stale pointers kept reachable from the pool
	paramsPool.Put(p)
}

// bytes returns the image of parameter i: the bytes the driver will read.
func (p *kernelParams) bytes(i int) []byte {
	return unsafe.Slice((*byte)(p.ptrs[i]), p.sizes[i])
}

// array returns the pointer array to hand to cuLaunchKernel (nil for a
// kernel without parameters).
func (p *kernelParams) array() unsafe.Pointer {
	if len(p.ptrs) == 0 {
		return nil
	}
	return unsafe.Pointer(&p.ptrs[0])
}
