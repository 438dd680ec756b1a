package cpu

import (
	"fmt"

	"github.com/llir/llvm/ir/value"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// A row kernel's later pass often recomputes what an earlier pass over the
// same range computed: softmax's write loop computes exp(x − max) again
// after the sum loop did. Where the later loop stores into a buffer at
// [row…, j] (j its induction variable) that nothing in the nest reads, the
// earlier loop stores the value there and the later one loads it back
// (from the cache: a row), as PyTorch's softmax does. The stored value is
// overwritten by the later loop's own store of the same element, so the
// buffer's final contents do not change.

// reused is one value computed by loop a (op src) and loaded by loop b in
// place of op dst.
type reused struct {
	src, dst *ir.Operation
	mem      *ir.Value
	idx      []*ir.Value // the store's indices; the last is b's iv
	ivA, ivB *ir.Value
}

// expensive are the ops worth a store and a load.
var expensive = map[string]bool{
	"math.exp": true, "math.exp2": true, "math.log": true, "math.log2": true, "math.log10": true,
	"math.tanh": true, "math.erf": true, "math.sin": true, "math.cos": true, "math.powf": true,
	"math.log1p": true, "math.atan2": true, "math.sinh": true, "math.tan": true, "math.atan": true,
}

// findReuse looks for such values among the loop.for ops of body (a
// nest's body), and records them in k.reuseStore and k.reuseLoad.
func (k *kt) findReuse(nest *ir.Operation, body *ir.Block) {
	var fors []*ir.Operation
	for _, op := range body.Ops() {
		if op.Name() == loop.ForOp {
			fors = append(fors, op)
		}
	}
	if len(fors) < 2 {
		return
	}
	// Buffers the nest reads, and how often each is stored.
	loaded := map[*ir.Value]bool{}
	stores := map[*ir.Value]int{}
	nest.Walk(func(op *ir.Operation) bool {
		switch op.Name() {
		case loop.LoadOp:
			loaded[op.Operand(0)] = true
		case loop.StoreOp:
			stores[op.Operand(1)]++
		}
		return true
	})
	for j, b := range fors {
		st := rowStore(b, loaded, stores)
		if st == nil {
			continue
		}
		ivB := loop.Body(b).Argument(0)
		found := false
		for _, a := range fors[:j] {
			if !sameRange(a, b) || !indicesBefore(st.Operands()[2:len(st.Operands())-1], a) {
				continue
			}
			ivA := loop.Body(a).Argument(0)
			for _, dst := range loop.Body(b).Ops() {
				if dst == st {
					break // the value must be loaded before the store overwrites it
				}
				if !expensive[dst.Name()] || dst.NumResults() != 1 || dst.Result(0).Type() != st.Operand(0).Type() {
					continue
				}
				for _, src := range loop.Body(a).Ops() {
					if equivalent(src, dst, ivA, ivB, a, b, stores, 0) {
						r := &reused{src: src, dst: dst, mem: st.Operand(1), idx: st.Operands()[2:], ivA: ivA, ivB: ivB}
						k.reuseStore[src] = append(k.reuseStore[src], r)
						k.reuseLoad[dst] = r
						found = true
						break
					}
				}
				if found {
					break // one value per buffer element
				}
			}
			if found {
				break
			}
		}
	}
}

// rowStore returns the store of loop b at [row…, iv] into a buffer that
// the nest does not read and stores only there, or nil.
func rowStore(b *ir.Operation, loaded map[*ir.Value]bool, stores map[*ir.Value]int) *ir.Operation {
	body := loop.Body(b)
	iv := body.Argument(0)
	for _, op := range body.Ops() {
		if op.Name() != loop.StoreOp || op.NumOperands() < 3 {
			continue
		}
		mem := op.Operand(1)
		idx := op.Operands()[2:]
		if loaded[mem] || stores[mem] != 1 || idx[len(idx)-1] != iv {
			continue
		}
		ok := true
		for _, x := range idx[:len(idx)-1] {
			ok = ok && !inside(x, b)
		}
		if ok {
			return op
		}
	}
	return nil
}

// sameRange reports whether two loops have the same bounds and step.
func sameRange(a, b *ir.Operation) bool {
	for i := range 3 {
		if a.Operand(i) != b.Operand(i) && !sameConstant(a.Operand(i), b.Operand(i)) {
			return false
		}
	}
	return true
}

func sameConstant(x, y *ir.Value) bool {
	dx, dy := x.DefiningOp(), y.DefiningOp()
	if dx == nil || dy == nil || dx.Name() != "arith.constant" || dy.Name() != "arith.constant" {
		return false
	}
	return x.Type() == y.Type() && fmt.Sprint(dx.Attr("value")) == fmt.Sprint(dy.Attr("value"))
}

// indicesBefore reports whether the values are available where loop a
// runs: defined outside a's block, or before a in it.
func indicesBefore(vals []*ir.Value, a *ir.Operation) bool {
	for _, v := range vals {
		if def := v.DefiningOp(); def != nil && def.Block() == a.Block() && !def.IsBeforeInBlock(a) {
			return false
		}
	}
	return true
}

// equivalent reports whether x (in loop b) computes what y (in loop a)
// computes in the same iteration: the same op and attributes on operands
// that are the loops' induction variables, the same values from outside
// both loops, or equivalent ops; loads only from buffers the nest does
// not store.
func equivalent(y, x *ir.Operation, ivA, ivB *ir.Value, a, b *ir.Operation, stores map[*ir.Value]int, depth int) bool {
	if depth > 16 || x.Name() != y.Name() || x.NumOperands() != y.NumOperands() || x.NumResults() != 1 ||
		y.NumResults() != 1 || x.NumRegions() != 0 || y.NumRegions() != 0 || x.Result(0).Type() != y.Result(0).Type() ||
		fmt.Sprint(x.Properties(), x.Attributes()) != fmt.Sprint(y.Properties(), y.Attributes()) {
		return false
	}
	if x.Name() == loop.LoadOp && stores[x.Operand(0)] > 0 {
		return false
	}
	if x.Name() == loop.StoreOp || x.Name() == loop.YieldOp {
		return false
	}
	for i := range x.NumOperands() {
		vx, vy := x.Operand(i), y.Operand(i)
		switch {
		case vx == ivB && vy == ivA:
		case vx == vy && !inside(vx, b) && !inside(vx, a):
		case sameConstant(vx, vy):
		default:
			dx, dy := vx.DefiningOp(), vy.DefiningOp()
			if dx == nil || dy == nil || !inside(vx, b) || !inside(vy, a) || dx.Block() != loop.Body(b) || dy.Block() != loop.Body(a) {
				return false
			}
			if !equivalent(dy, dx, ivA, ivB, a, b, stores, depth+1) {
				return false
			}
		}
	}
	return true
}

// storeReused stores the values of op that a later loop reloads.
func (k *kt) storeReused(op *ir.Operation) error {
	for _, r := range k.reuseStore[op] {
		idx := make([]value.Value, len(r.idx))
		for i, x := range r.idx[:len(r.idx)-1] {
			idx[i] = k.get(x)
		}
		idx[len(idx)-1] = k.get(r.ivA)
		p, _, err := k.addressOf(r.mem, idx)
		if err != nil {
			return err
		}
		k.cur.NewStore(k.get(op.Result(0)), p)
	}
	return nil
}

// loadReused loads the value an earlier loop stored in place of op.
func (k *kt) loadReused(op *ir.Operation, r *reused) error {
	idx := make([]value.Value, len(r.idx))
	for i, x := range r.idx {
		idx[i] = k.get(x)
	}
	p, elem, err := k.addressOf(r.mem, idx)
	if err != nil {
		return err
	}
	k.set(op, k.cur.NewLoad(elem, p))
	return nil
}
