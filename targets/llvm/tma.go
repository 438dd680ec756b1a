package llvm

import (
	"fmt"
	"strings"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// The Tensor Memory Accelerator. A kernel argument read through a tensor
// map (gpu.TensorMapAttr) becomes a 128-byte byval parameter aligned to
// 64, `[128 x i8]* byval([128 x i8]) align 64`, listed as a grid
// constant in !nvvm.annotations, so that its address is the generic
// address of the parameter itself (cvta.param), which
// cp.async.bulk.tensor reads the map from; the runtime fills the
// parameter with the encoded map at launch. gpu.tma_load and
// gpu.mbarrier_expect_tx become inline PTX (LLVM 19 has no intrinsic
// for either), which llc passes through and the native backend
// substitutes.

// tensorMapParam is the parameter type of a tensor-map argument.
func tensorMapParam(i int) *llir.Param {
	arr := types.NewArray(gpu.TensorMapBytes, types.I8)
	p := llir.NewParam(fmt.Sprintf("arg%d", i), types.NewPointer(arr))
	p.Attrs = append(p.Attrs, llir.Byval{Typ: arr}, llir.Align(gpu.TensorMapAlign))
	return p
}

// annotateGridConstants lists the 1-based indices of f's grid-constant
// parameters in !nvvm.annotations.
func (t *translator) annotateGridConstants(f *llir.Func, params []int) {
	if len(params) == 0 {
		return
	}
	list := &metadata.Tuple{MetadataID: -1}
	for _, p := range params {
		list.Fields = append(list.Fields, constant.NewInt(types.I32, int64(p+1)))
	}
	node := &metadata.Tuple{MetadataID: -1, Fields: []metadata.Field{f, &metadata.String{Value: "grid_constant"}, list}}
	def := t.m.NamedMetadataDefs["nvvm.annotations"]
	def.Nodes = append(def.Nodes, node)
	t.m.MetadataDefs = append(t.m.MetadataDefs, list, node)
}

// tmaLoadAsm is gpu.tma_load's PTX for a tensor map of rank r: $0 the
// destination's and $1 the barrier's workgroup address, $2 the map's
// generic address, then the coordinates innermost first; a nonzero mask
// multicasts to the cluster's blocks in it (an immediate).
func tmaLoadAsm(r int, mask int64) string {
	coords := make([]string, r)
	for i := range coords {
		coords[i] = fmt.Sprintf("$%d", 3+i)
	}
	if mask != 0 {
		return fmt.Sprintf("cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [$0], [$2, {%s}], [$1], %d;",
			r, strings.Join(coords, ", "), mask)
	}
	return fmt.Sprintf("cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$2, {%s}], [$1];",
		r, strings.Join(coords, ", "))
}

// The split cluster barrier's PTX: the arrival releases and the wait
// acquires at the cluster's scope (their defaults).
const (
	clusterArriveAsm = "barrier.cluster.arrive;"
	clusterWaitAsm   = "barrier.cluster.wait;"
)

// plainAsm emits inline PTX without operands, with side effects.
func (k *kernelTranslator) plainAsm(text string) error {
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void)), text, "")
	ia.SideEffect = true
	k.cur.NewCall(ia)
	return nil
}

// sharedAddress is the 32-bit workgroup address of mem[idx].
func (k *kernelTranslator) sharedAddress(mem, idx *ir.Value) (llvmValue, error) {
	p, err := k.bytePointer(mem, idx)
	if err != nil {
		return nil, err
	}
	return k.cur.NewTrunc(k.cur.NewPtrToInt(p, types.I64), types.I32), nil
}

// tmaLoad translates gpu.tma_load to inline PTX.
func (k *kernelTranslator) tmaLoad(op *ir.Operation) error {
	o := gpu.TMALoadOf(op)
	dst, err := k.sharedAddress(o.Dst, o.Index)
	if err != nil {
		return err
	}
	bar, err := k.sharedAddress(o.Bars, o.Bar)
	if err != nil {
		return err
	}
	m := k.get(o.Map)
	if m == nil {
		return fmt.Errorf("the tensor map is not a kernel parameter")
	}
	args := []llvmValue{dst, bar, k.cur.NewPtrToInt(m, types.I64)}
	params := []types.Type{types.I32, types.I32, types.I64}
	cons := []string{"r", "r", "l"}
	for i := len(o.Coords) - 1; i >= 0; i-- {
		args, params, cons = append(args, k.get(o.Coords[i])), append(params, types.I32), append(cons, "r")
	}
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(types.Void, params...)), tmaLoadAsm(len(o.Coords), gpu.Multicast(op)), strings.Join(cons, ","))
	ia.SideEffect = true
	k.cur.NewCall(ia, args...)
	return nil
}
