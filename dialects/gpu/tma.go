package gpu

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// The Tensor Memory Accelerator (sm_90): gpu.tma_load copies a box of a
// tensor in global memory into workgroup memory in one instruction of one
// thread, addressed through a tensor map (the tensor's sizes, the box and
// the shared-memory swizzle, encoded by the driver), and signals its
// completion on an mbarrier by transaction bytes rather than arrivals:
// gpu.mbarrier_expect_tx adds the bytes a phase waits for and arrives, and
// each copy's bytes count them down, so that the phase completes once
// every arrival and every expected byte is in.
//
// A tensor map lives in a kernel parameter: the kernel's global memref
// argument that carries the argument attribute TensorMapAttr is passed,
// not as a pointer, but as the 128-byte map of that buffer, which the
// runtime encodes at each launch (cuTensorMapEncodeTiled) from the
// buffer's address and element count and the attribute's geometry. Such
// an argument is used by gpu.tma_load only.
const (
	TMALoadOp          = OpTMALoad
	MbarrierExpectTxOp = OpMbarrierExpectTx
)

// TensorMapAttr is the argument attribute of a kernel's memref argument
// read through a tensor map: a dictionary of
//
//	inner   = array<i64: …>  the sizes of every dimension but the outermost, outermost first
//	box     = array<i64: …>  the box a copy moves, outermost first (one more entry than inner)
//	swizzle = 0, 32, 64 or 128 : i64  the shared-memory swizzle span in bytes
//
// The outermost size is the buffer's element count over the product of
// the others, so that a dynamic leading dimension needs no argument.
const TensorMapAttr = "gpu.tensor_map"

// TensorMapBytes is the size of an encoded tensor map (CUtensorMap), and
// TensorMapAlign its alignment as a kernel parameter.
const (
	TensorMapBytes = 128
	TensorMapAlign = 64
)

// The limits of a tensor map (PTX cp.async.bulk.tensor; the driver's
// cuTensorMapEncodeTiled).
const (
	MaxTensorMapRank = 5
	MaxTMABox        = 256
	tmaChunk         = 16 // bytes: the box's inner extent and the strides are multiples
)

// TensorMap is the geometry of a tensor map (see TensorMapAttr).
type TensorMap struct {
	Inner   []int64
	Box     []int64
	Swizzle int64
}

// Rank is the number of the tensor's dimensions.
func (m TensorMap) Rank() int { return len(m.Box) }

// BoxElements is the number of elements a copy moves.
func (m TensorMap) BoxElements() int64 {
	n := int64(1)
	for _, b := range m.Box {
		n *= b
	}
	return n
}

// Attr is m as a TensorMapAttr dictionary.
func (m TensorMap) Attr() ir.DictAttr {
	return ir.Dict(
		ir.NamedAttr{Name: "box", Value: ir.I64Array(m.Box...)},
		ir.NamedAttr{Name: "inner", Value: ir.I64Array(m.Inner...)},
		ir.NamedAttr{Name: "swizzle", Value: ir.Int(m.Swizzle, ir.I64)},
	)
}

// Sizes returns the tensor's sizes, outermost first, for a buffer of
// elems elements; an element count that is not whole outer slices is an
// error.
func (m TensorMap) Sizes(elems int64) ([]int64, error) {
	slice := int64(1)
	for _, n := range m.Inner {
		slice *= n
	}
	if slice <= 0 || elems%slice != 0 {
		return nil, fmt.Errorf("a buffer of %d elements is not whole slices of %v", elems, m.Inner)
	}
	return append([]int64{elems / slice}, m.Inner...), nil
}

// SwizzleOffset maps the byte offset off of a box in workgroup memory to
// where the copy stores it: with a swizzle span of S bytes, the 16-byte
// chunk bits 4 to 4+log2(S/16) are xored with the bits 7 up of the
// offset (the 128-byte row modulo S/16), the layout gpu.wgmma's swizzled
// descriptors read. The box's destination is aligned to the swizzle's
// period (8 rows of 128 bytes), so the pattern is the address's.
func (m TensorMap) SwizzleOffset(off int64) int64 {
	if m.Swizzle == 0 {
		return off
	}
	mask := m.Swizzle/tmaChunk - 1
	return off ^ ((off >> 7) & mask << 4)
}

// DestAlign is the alignment in bytes a copy's workgroup destination
// needs: the swizzle's period of 1024 bytes, else 128.
func (m TensorMap) DestAlign() int64 {
	if m.Swizzle != 0 {
		return 1024
	}
	return 128
}

// check reports a geometry the hardware cannot copy for elements of
// size bytes.
func (m TensorMap) check(size int64) error {
	r := len(m.Box)
	switch {
	case r < 1 || r > MaxTensorMapRank || len(m.Inner) != r-1:
		return fmt.Errorf("a tensor map has 1 to %d dimensions, and inner one fewer entries than box: box %v, inner %v", MaxTensorMapRank, m.Box, m.Inner)
	case m.Swizzle != 0 && m.Swizzle != 32 && m.Swizzle != 64 && m.Swizzle != 128:
		return fmt.Errorf("swizzle %d is not 0, 32, 64 or 128", m.Swizzle)
	}
	for _, b := range m.Box {
		if b < 1 || b > MaxTMABox {
			return fmt.Errorf("box %v: each extent is 1 to %d", m.Box, MaxTMABox)
		}
	}
	for _, n := range m.Inner {
		if n < 1 {
			return fmt.Errorf("inner sizes %v must be positive", m.Inner)
		}
	}
	row := m.Box[r-1] * size
	if row%tmaChunk != 0 || (m.Swizzle != 0 && row > m.Swizzle) {
		return fmt.Errorf("the box's inner extent of %d bytes must be a multiple of %d, and at most the swizzle span %d", row, tmaChunk, m.Swizzle)
	}
	if r > 1 && m.Inner[r-2]*size%tmaChunk != 0 {
		return fmt.Errorf("rows of %d bytes: a tensor map's strides must be multiples of %d bytes", m.Inner[r-2]*size, tmaChunk)
	}
	return nil
}

// tensorMapOf parses a TensorMapAttr dictionary.
func tensorMapOf(a ir.Attribute) (TensorMap, error) {
	d, ok := a.(ir.DictAttr)
	if !ok {
		return TensorMap{}, fmt.Errorf("%s must be a dictionary, not %s", TensorMapAttr, a)
	}
	ints := func(name string) ([]int64, error) {
		v, ok := d.Get(name).(ir.DenseArrayAttr)
		if !ok || v.Elem != ir.I64 {
			return nil, fmt.Errorf("%s needs %s = array<i64: …>", TensorMapAttr, name)
		}
		return v.Values, nil
	}
	var m TensorMap
	var err error
	if m.Box, err = ints("box"); err != nil {
		return m, err
	}
	if m.Inner, err = ints("inner"); err != nil {
		return m, err
	}
	s, ok := d.Get("swizzle").(ir.IntegerAttr)
	if !ok {
		return m, fmt.Errorf("%s needs swizzle = an integer", TensorMapAttr)
	}
	m.Swizzle = s.Value
	return m, nil
}

// TensorMapArg returns the geometry of the kernel argument i of the
// gpu.func fn, and whether it is read through a tensor map.
func TensorMapArg(fn *ir.Operation, i int) (TensorMap, bool, error) {
	a := argAttrsAt(fn.Attr("arg_attrs"), i).Get(TensorMapAttr)
	if a == nil {
		return TensorMap{}, false, nil
	}
	m, err := tensorMapOf(a)
	return m, true, err
}

// TensorMapOf returns the geometry of the tensor map v, a gpu.func
// argument with TensorMapAttr, and the function.
func TensorMapOf(v *ir.Value) (TensorMap, *ir.Operation, error) {
	blk := v.ParentBlock()
	var fn *ir.Operation
	if blk != nil {
		fn = blk.ParentOp()
	}
	if !v.IsBlockArgument() || fn == nil || fn.Name() != FuncOp || Body(fn) != blk {
		return TensorMap{}, nil, fmt.Errorf("the tensor map must be an argument of the kernel")
	}
	m, ok, err := TensorMapArg(fn, v.Index())
	if err == nil && !ok {
		err = fmt.Errorf("kernel argument %d has no %s attribute", v.Index(), TensorMapAttr)
	}
	return m, fn, err
}

// SetTensorMap marks argument i of the gpu.func fn as read through a
// tensor map of geometry m.
func SetTensorMap(fn *ir.Operation, i int, m TensorMap) {
	n := len(FuncType(fn).Inputs)
	attrs := make(ir.ArrayAttr, n)
	old, _ := fn.Attr("arg_attrs").(ir.ArrayAttr)
	for j := range attrs {
		d := ir.Dict()
		if j < len(old) {
			if od, ok := old[j].(ir.DictAttr); ok {
				d = od
			}
		}
		if j == i {
			d = d.With(TensorMapAttr, m.Attr())
		}
		attrs[j] = d
	}
	fn.SetAttr("arg_attrs", attrs)
}

// verifyTensorMaps checks the tensor-map arguments of the gpu.func fn:
// 1-D global memrefs of a size the geometry fits, used by gpu.tma_load
// only.
func verifyTensorMaps(fn *ir.Operation, entry *ir.Block) error {
	for i, t := range FuncType(fn).Inputs {
		m, ok, err := TensorMapArg(fn, i)
		if err != nil {
			return fmt.Errorf("argument %d: %w", i, err)
		}
		if !ok {
			continue
		}
		elem, err := workgroup1D(entry.Argument(i), fmt.Sprintf("argument %d, a tensor map,", i), false)
		if err != nil {
			return err
		}
		mt := t.(*ir.MemRefType)
		size, err := elemBytes(elem)
		if err != nil {
			return fmt.Errorf("argument %d: %w", i, err)
		}
		if err := m.check(size); err != nil {
			return fmt.Errorf("argument %d: %w", i, err)
		}
		if n := mt.Shape()[0]; n != ir.Dynamic {
			if _, err := m.Sizes(n); err != nil {
				return fmt.Errorf("argument %d: %w", i, err)
			}
		}
		for _, u := range entry.Argument(i).Users() {
			if u.Name() != TMALoadOp {
				return fmt.Errorf("argument %d is a tensor map, which only %s reads, not %s", i, TMALoadOp, u.Name())
			}
		}
	}
	return nil
}

var tmaOps = []*ir.OpDef{tmaLoadDef, mbarrierExpectTxDef}

var tmaLoadDef = &ir.OpDef{
	Name:    TMALoadOp,
	Summary: "Copies a box of a tensor from global to workgroup memory through a tensor map (sm_90)",
	Description: "As PTX `cp.async.bulk.tensor.Nd.shared::cluster.global.tile." +
		"mbarrier::complete_tx::bytes`: one thread copies the box of the tensor map `map` " +
		"(a kernel argument with the gpu.tensor_map attribute) whose first element is at " +
		"the i32 coordinates (outermost first; they may be negative or past the end) into " +
		"the workgroup buffer `dst` from element `index`: the box's elements row-major, each " +
		"128-byte row's 16-byte chunks permuted by the map's swizzle, elements outside the " +
		"tensor zero. The copy is asynchronous; its box bytes count down the transaction " +
		"bytes of the current phase of the mbarrier `bars[bar]` once it lands, and a thread " +
		"may read the box only after waiting for that phase. The destination is aligned to " +
		"1024 bytes with a swizzle, else 128. With the `multicast` mask (sm_90, PTX's " +
		"`.multicast::cluster`), the box lands instead in the workgroup memory of each " +
		"block of the cluster whose rank's bit is set, at the same buffer and element, and " +
		"its bytes count down the mbarrier at the same index in each of those blocks.",
	Inherent: []string{MulticastAttr},
	Attrs: []ir.ArgDoc{
		{Name: "multicast", Doc: "optional i64 mask of the cluster's blocks that receive the box (gpu.cluster_size)"},
	},
	Operands: []ir.ArgDoc{
		{Name: "dst, index", Doc: "1-D workgroup memref and the box's first element in it"},
		{Name: "bars, bar", Doc: "1-D workgroup memref of i64 and the barrier's index"},
		{Name: "map", Doc: "the kernel's tensor-map argument (1-D global memref of the same element type)"},
		{Name: "coords", Doc: "i32 coordinates of the box, one a dimension, outermost first"},
	},
	Example: `"gpu.tma_load"(%sa, %i, %bars, %b, %arg0, %m, %k) : (memref<32768xbf16, 3>, index, memref<9xi64, 3>, index, memref<?xbf16>, i32, i32) -> ()`,
	Verify:  verifyTMALoad,
}

var mbarrierExpectTxDef = &ir.OpDef{
	Name:    MbarrierExpectTxOp,
	Summary: "Expects transaction bytes on an asynchronous barrier's phase and arrives",
	Description: "As PTX `mbarrier.arrive.expect_tx.shared::cta.b64`: adds `bytes` to the " +
		"transaction bytes the current phase of the mbarrier at `bars[index]` waits for, " +
		"then counts one arrival. The phase completes once its arrivals are all in and the " +
		"asynchronous copies (gpu.tma_load) that signal it have landed as many bytes as " +
		"were expected; too few or too many bytes leave it incomplete.",
	Operands: []ir.ArgDoc{
		{Name: "bars, index", Doc: "1-D workgroup memref of i64 and the barrier's index"},
		{Name: "bytes", Doc: "i32: transaction bytes (0 to 2^20 − 1)"},
	},
	Example: `"gpu.mbarrier_expect_tx"(%bars, %i, %n) : (memref<9xi64, 3>, index, i32) -> ()`,
	Verify:  verifyMbarrier(3),
}

// TMALoad inserts gpu.tma_load of the box at coords (i32, outermost
// first) of the tensor map tmap into dst from element index, signalling
// bars[bar].
func TMALoad(b *ir.Builder, loc ir.Location, dst, index, bars, bar, tmap *ir.Value, coords []*ir.Value) *ir.Operation {
	return b.Op(TMALoadOp, loc, append([]*ir.Value{dst, index, bars, bar, tmap}, coords...), nil)
}

// TMALoadMulticast is TMALoad with the box going to the blocks of the
// cluster in mask (MulticastAttr).
func TMALoadMulticast(b *ir.Builder, loc ir.Location, dst, index, bars, bar, tmap *ir.Value, coords []*ir.Value, mask int64) *ir.Operation {
	return b.Op(TMALoadOp, loc, append([]*ir.Value{dst, index, bars, bar, tmap}, coords...), nil,
		ir.NamedAttr{Name: MulticastAttr, Value: ir.Int(mask, ir.I64)})
}

// MbarrierExpectTx inserts gpu.mbarrier_expect_tx of bytes (an i32) on
// bars[index].
func MbarrierExpectTx(b *ir.Builder, loc ir.Location, bars, index, bytes *ir.Value) *ir.Operation {
	return b.Op(MbarrierExpectTxOp, loc, []*ir.Value{bars, index, bytes}, nil)
}

// TMALoadOperands are a gpu.tma_load's operands by role.
type TMALoadOperands struct {
	Dst, Index, Bars, Bar, Map *ir.Value
	Coords                     []*ir.Value
}

// TMALoadOf returns op's operands by role.
func TMALoadOf(op *ir.Operation) TMALoadOperands {
	o := op.Operands()
	return TMALoadOperands{Dst: o[0], Index: o[1], Bars: o[2], Bar: o[3], Map: o[4], Coords: o[5:]}
}

func verifyTMALoad(op *ir.Operation) error {
	if err := inKernel(op); err != nil {
		return err
	}
	if err := verifyMulticast(op); err != nil {
		return err
	}
	if op.NumOperands() < 6 || op.NumResults() != 0 {
		return fmt.Errorf("expects a destination, an index, barriers, an index, a tensor map and coordinates, and no results")
	}
	o := TMALoadOf(op)
	elem, err := workgroup1D(o.Dst, "the destination", true)
	if err != nil {
		return err
	}
	bars, err := workgroup1D(o.Bars, "the barriers", true)
	if err != nil {
		return err
	}
	if bars != ir.I64 {
		return fmt.Errorf("the barriers must be i64 words, not %s", bars)
	}
	if o.Index.Type() != ir.Index || o.Bar.Type() != ir.Index {
		return fmt.Errorf("the destination's and the barrier's indices must be index")
	}
	src, err := workgroup1D(o.Map, "the tensor map", false)
	if err != nil {
		return err
	}
	if src != elem {
		return fmt.Errorf("copies %s elements into a buffer of %s", src, elem)
	}
	m, _, err := TensorMapOf(o.Map)
	if err != nil {
		return err
	}
	if len(o.Coords) != m.Rank() {
		return fmt.Errorf("has %d coordinates for a tensor map of rank %d", len(o.Coords), m.Rank())
	}
	for i, c := range o.Coords {
		if c.Type() != ir.I32 {
			return fmt.Errorf("coordinate %d must be i32, not %s", i, c.Type())
		}
	}
	if n := o.Dst.Type().(*ir.MemRefType).Shape()[0]; m.BoxElements() > n {
		return fmt.Errorf("a box of %d elements does not fit the %d of the destination", m.BoxElements(), n)
	}
	return nil
}
