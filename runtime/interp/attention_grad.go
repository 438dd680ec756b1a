package interp

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// graphAttentionGrad runs graph.attention_grad: with P the forward's
// probabilities, dv = Pᵀ·do (P rounded to the element type), dS =
// P·(do·vᵀ − D)·scale with D = Σ do·o along the last dim (in the compute
// type), rounded to the element type, dq = dS·k and dk = dSᵀ·q. Every
// step rounds as graph-decompose's expansion does.
func graphAttentionGrad(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	q, k, v, o, do := ts[0], ts[1], ts[2], ts[3], ts[4]
	at, err := attentionProbs(op, ts[:3])
	if err != nil {
		return nil, err
	}
	elem, ct := q.elem, graph.ComputeType(q.elem)
	r, acc := rounder(ct), accRounder(ct)
	b := at.batch
	lq, lk, d, dvn := int(at.lq), int(at.lk), int(at.d), int(v.shape[len(v.shape)-1])
	if !slices.Equal(o.shape, do.shape) || len(o.shape) != len(b)+2 || int(o.shape[len(b)+1]) != dvn {
		return nil, fmt.Errorf("o %s and do %s must have attention's result shape", o, do)
	}
	t := func(x *Tensor) (*Tensor, error) { return transposeTensor(x, lastSwapped(len(x.shape))) }
	wide := func(x *Tensor) (*Tensor, error) { return FromFloat64s(ct, x.shape, x.Float64s()) }

	pe, err := FromFloat64s(elem, at.scores, at.p)
	if err != nil {
		return nil, err
	}
	peT, err := t(pe)
	if err != nil {
		return nil, err
	}
	dv, err := matmulTensor(peT, do, nil, elem, v.shape, b, b, b, lk, lq, dvn)
	if err != nil {
		return nil, err
	}
	doW, err := wide(do)
	if err != nil {
		return nil, err
	}
	vW, err := wide(v)
	if err != nil {
		return nil, err
	}
	vWT, err := t(vW)
	if err != nil {
		return nil, err
	}
	dp, err := matmulTensor(doW, vWT, nil, ct, at.scores, b, b, b, lq, dvn, lk)
	if err != nil {
		return nil, err
	}
	// D per query row: the products rounded, then summed in order.
	ov, dov := o.Float64s(), do.Float64s()
	// One D a query row: counted from the scores, not from o, whose rows
	// are empty when the value width is 0.
	dd := make([]float64, len(at.p)/max(lk, 1))
	for i := range dd {
		var s float64
		for j := range dvn {
			s = acc(s + r(dov[i*dvn+j]*ov[i*dvn+j]))
		}
		dd[i] = r(s)
	}
	ds := dp.Float64s()
	for i := range ds {
		ds[i] = r(r(at.p[i]*r(ds[i]-dd[i/lk])) * at.scale)
	}
	dse, err := FromFloat64s(elem, at.scores, ds)
	if err != nil {
		return nil, err
	}
	dq, err := matmulTensor(dse, k, nil, elem, q.shape, b, b, b, lq, lk, d)
	if err != nil {
		return nil, err
	}
	dseT, err := t(dse)
	if err != nil {
		return nil, err
	}
	dk, err := matmulTensor(dseT, q, nil, elem, k.shape, b, b, b, lk, lq, d)
	if err != nil {
		return nil, err
	}
	return []Value{dq, dk, dv}, nil
}

// lastSwapped is the permutation of rank dims that swaps the last two.
func lastSwapped(rank int) []int64 {
	perm := make([]int64, rank)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[rank-2], perm[rank-1] = perm[rank-1], perm[rank-2]
	return perm
}
