package exec

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
)

// tensorMap is a kernel argument passed as a tensor map
// (gpu.TensorMapAttr): the buffer's element type as the driver names it
// and the map's geometry. Each launch encodes the map of the buffer it
// passes (cuda.TensorMapArg), its outermost size from the buffer's
// element count.
type tensorMap struct {
	elem cuda.TensorMapElem
	geom gpu.TensorMap
}

// tensorMapElems are the element types a tensor map may have.
var tensorMapElems = map[ir.Type]cuda.TensorMapElem{
	ir.BF16: cuda.TensorMapBF16,
	ir.F16:  cuda.TensorMapF16,
	ir.F32:  cuda.TensorMapF32,
}

// tensorMapOf returns argument i of the gpu.func fn as a tensor map, nil
// when it is passed otherwise.
func tensorMapOf(fn *ir.Operation, i int) (*tensorMap, error) {
	geom, ok, err := gpu.TensorMapArg(fn, i)
	if err != nil || !ok {
		return nil, err
	}
	mt, _ := gpu.FuncType(fn).Inputs[i].(*ir.MemRefType)
	if mt == nil {
		return nil, fmt.Errorf("a tensor map must be of a memref, not %s", gpu.FuncType(fn).Inputs[i])
	}
	elem, ok := tensorMapElems[mt.ElementType()]
	if !ok {
		return nil, fmt.Errorf("no tensor map of %s elements (bf16, f16, f32)", mt.ElementType())
	}
	return &tensorMap{elem: elem, geom: geom}, nil
}

// arg is the tensor map of the buffer b.
func (m *tensorMap) arg(b *devBuffer) (cuda.TensorMapArg, error) {
	n, err := elementCount(b.shape)
	if err != nil {
		return cuda.TensorMapArg{}, err
	}
	sizes, err := m.geom.Sizes(n)
	if err != nil {
		return cuda.TensorMapArg{}, err
	}
	return cuda.TensorMapArg{Ptr: b.mem.ptr, Elem: m.elem, Sizes: sizes, Box: m.geom.Box, Swizzle: m.geom.Swizzle}, nil
}
