package cuda

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"
)

// Tensor maps (sm_90's Tensor Memory Accelerator). A kernel parameter
// declared `.param .align 64 .b8 p[128]` and read by cp.async.bulk.tensor
// takes the 128-byte CUtensorMap of a tensor in device memory, which
// Launch encodes from a TensorMapArg with cuTensorMapEncodeTiled (once a
// device for an address and a geometry: tensorMapCache). The map
// holds the tensor's address, so a launch captured into a CUDA graph
// keeps the map of the buffers it was captured with, as it keeps their
// pointers.

// ErrNoTensorMaps is returned when the driver lacks cuTensorMapEncodeTiled
// (before CUDA 12).
var ErrNoTensorMaps = errors.New("the CUDA driver has no cuTensorMapEncodeTiled (CUDA 12 or later)")

// TensorMapBytes is the size of an encoded tensor map.
const TensorMapBytes = 128

// tensorMapAlign is the alignment cuTensorMapEncodeTiled writes a map at.
const tensorMapAlign = 64

// TensorMapElem is a tensor map's element type (CUtensorMapDataType).
type TensorMapElem uint32

// The element types of tensor maps Strata encodes.
const (
	TensorMapF16  TensorMapElem = 6
	TensorMapF32  TensorMapElem = 7
	TensorMapBF16 TensorMapElem = 9
)

// elemBytes is the size of an element of type e.
func (e TensorMapElem) elemBytes() (uint64, error) {
	switch e {
	case TensorMapF16, TensorMapBF16:
		return 2, nil
	case TensorMapF32:
		return 4, nil
	}
	return 0, fmt.Errorf("unsupported tensor map element type %d", e)
}

// TensorMapArg is a kernel argument passed as the tensor map of a dense
// row-major tensor at Ptr: its Sizes and the Box a copy moves, both
// outermost first, and the shared-memory swizzle span in bytes (0, 32, 64
// or 128). Elements outside the tensor read as zero. The map of an empty
// tensor (a size 0) cannot be encoded: it is passed as zeros, which a
// kernel must not copy from (a GEMM with no rows has no tiles).
type TensorMapArg struct {
	Ptr     DevicePtr
	Elem    TensorMapElem
	Sizes   []int64
	Box     []int64
	Swizzle int64
}

// tensorMapEncoding is a TensorMapArg as cuTensorMapEncodeTiled takes it:
// innermost first, the strides in bytes of every dimension but the
// innermost.
type tensorMapEncoding struct {
	dims, strides    []uint64
	box, elemStrides []uint32
	swizzle          uint32
}

// The L2 promotion of the encoded maps (CU_TENSOR_MAP_L2_PROMOTION_L2_256B):
// a box's rows are fetched into L2 in 256-byte sectors.
const tensorMapL2Promotion = 3

// encoding checks a and converts it for the driver.
func (a TensorMapArg) encoding() (tensorMapEncoding, error) {
	var e tensorMapEncoding
	size, err := a.Elem.elemBytes()
	if err != nil {
		return e, err
	}
	r := len(a.Sizes)
	if r < 1 || r > maxTensorMapRank || len(a.Box) != r {
		return e, fmt.Errorf("a tensor map of %d sizes and %d box extents (1 to 5 of each)", r, len(a.Box))
	}
	if a.Ptr%16 != 0 {
		return e, fmt.Errorf("tensor map of %#x: the address must be 16-byte aligned", uint64(a.Ptr))
	}
	swizzles := map[int64]uint32{0: 0, 32: 1, 64: 2, 128: 3}
	swz, ok := swizzles[a.Swizzle]
	if !ok {
		return e, fmt.Errorf("tensor map swizzle %d is not 0, 32, 64 or 128", a.Swizzle)
	}
	e.swizzle = swz
	stride := size
	for d := r - 1; d >= 0; d-- {
		n, b := a.Sizes[d], a.Box[d]
		if n < 1 || b < 1 || b > 256 {
			return e, fmt.Errorf("tensor map of sizes %v, box %v: sizes must be positive, box extents 1 to 256", a.Sizes, a.Box)
		}
		if d < r-1 {
			if stride%16 != 0 {
				return e, fmt.Errorf("tensor map of sizes %v: a stride of %d bytes is not a multiple of 16", a.Sizes, stride)
			}
			e.strides = append(e.strides, stride)
		}
		e.dims = append(e.dims, uint64(n))
		e.box = append(e.box, uint32(b))
		e.elemStrides = append(e.elemStrides, 1)
		stride *= uint64(n)
	}
	return e, nil
}

// tensorMapImage is an encoded tensor map, the parameter's bytes.
type tensorMapImage struct{ b *[TensorMapBytes]byte }

// maxTensorMapRank is the most dimensions a tensor map has.
const maxTensorMapRank = 5

// tensorMapKey is a TensorMapArg in comparable form.
type tensorMapKey struct {
	ptr     DevicePtr
	elem    TensorMapElem
	rank    int
	sizes   [maxTensorMapRank]int64
	box     [maxTensorMapRank]int64
	swizzle int64
}

// tensorMapCache holds the maps a device encoded, so that a launch on the
// buffers of an earlier one (each call of a model's step) passes the map
// encoded then, without a driver call. A map holds an address and a
// geometry only, so it stays right for whatever buffer lies there later.
// It is cleared when it holds tensorMapCacheSize maps.
type tensorMapCache struct {
	mu   sync.Mutex
	maps map[tensorMapKey]tensorMapImage
}

// tensorMapCacheSize bounds a device's cached maps.
const tensorMapCacheSize = 1024

// get returns the map of a, encoding it with encode when it is not cached.
func (c *tensorMapCache) get(a TensorMapArg, encode func(TensorMapArg) (tensorMapImage, error)) (tensorMapImage, error) {
	if len(a.Sizes) > maxTensorMapRank || len(a.Box) != len(a.Sizes) {
		return encode(a) // (refused there)
	}
	k := tensorMapKey{ptr: a.Ptr, elem: a.Elem, rank: len(a.Sizes), swizzle: a.Swizzle}
	copy(k.sizes[:], a.Sizes)
	copy(k.box[:], a.Box)
	c.mu.Lock()
	img, ok := c.maps[k]
	c.mu.Unlock()
	if ok {
		return img, nil
	}
	img, err := encode(a)
	if err != nil {
		return img, err
	}
	c.mu.Lock()
	if c.maps == nil || len(c.maps) >= tensorMapCacheSize {
		c.maps = map[tensorMapKey]tensorMapImage{}
	}
	c.maps[k] = img
	c.mu.Unlock()
	return img, nil
}

// encodeTensorMap encodes a with the driver.
func (dev *Device) encodeTensorMap(a TensorMapArg) (tensorMapImage, error) {
	if dev.drv.cuTensorMapEncodeTiled == nil {
		return tensorMapImage{}, ErrNoTensorMaps
	}
	if slices.Contains(a.Sizes, 0) {
		return tensorMapImage{new([TensorMapBytes]byte)}, nil
	}
	e, err := a.encoding()
	if err != nil {
		return tensorMapImage{}, err
	}
	// Go does not align a [128]byte to 64: take an aligned window of a
	// larger block (heap objects do not move).
	buf := make([]byte, TensorMapBytes+tensorMapAlign)
	off := (tensorMapAlign - uintptr(unsafe.Pointer(&buf[0]))%tensorMapAlign) % tensorMapAlign
	img := (*[TensorMapBytes]byte)(buf[off : off+TensorMapBytes])
	var strides *uint64
	if len(e.strides) > 0 {
		strides = &e.strides[0]
	}
	err = dev.call("cuTensorMapEncodeTiled", func() Result {
		return dev.drv.cuTensorMapEncodeTiled(unsafe.Pointer(img), uint32(a.Elem), uint32(len(e.dims)), a.Ptr,
			&e.dims[0], strides, &e.box[0], &e.elemStrides[0], 0, e.swizzle, tensorMapL2Promotion, 0)
	})
	return tensorMapImage{img}, err
}

// encodeTensorMaps returns args with each TensorMapArg encoded (a copy of
// args when there is one).
func (dev *Device) encodeTensorMaps(fn *Function, args []any) ([]any, error) {
	copied := false
	for i, a := range args {
		m, ok := a.(TensorMapArg)
		if !ok {
			continue
		}
		img, err := dev.maps.get(m, dev.encodeTensorMap)
		if err != nil {
			return nil, fmt.Errorf("cuda: kernel argument %d of %s: %w", i, fn.name, err)
		}
		if !copied {
			args, copied = append([]any(nil), args...), true
		}
		args[i] = img
	}
	return args, nil
}
