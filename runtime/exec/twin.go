package exec

import (
	"errors"
	"slices"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/interp"
)

// This file is the graphs a Bound captures besides its first: variants
// that read Array arguments in place, where a CUDA graph's replay left
// them, instead of copying them into the Bound's buffers. A graph reads
// its arguments at the addresses it was captured with; the first capture
// (Bound.graph) reads the Bound's own buffers, into which each call
// copies its Arrays. But a result of a replay lies at the same address
// replay after replay (a block of the graph's static pool), so a plan
// fed such results — a training step's backward pass reading what the
// forward pass saved, the optimizer reading the gradients, a decoding
// step its KV caches — can be captured once more reading them there, and
// a later call whose Arrays lie at those addresses replays that variant
// and copies nothing.
//
// Only the first capture's pool moves nothing under a variant: a variant
// never writes the pool it reads an argument from. One reading the first
// capture's pool (its own results fed back, as a KV cache or an
// optimizer's state) writes a second pool, the twin, and one reading the
// twin writes the first pool, so that a loop feeding the results back
// alternates between the two pools and copies nothing; a variant's
// allocations replay those of the first capture of the pool it writes,
// so it adds no memory. An argument from anywhere else (uploaded, or
// computed by a plain launch) is copied into the Bound's buffer, as
// before.

// maxVariants bounds the variants of a Bound: a call whose arguments lie
// elsewhere takes the first capture, with its copies.
const maxVariants = 8

// feedback is an argument a variant reads in place: argument arg at buf,
// a block of another graph's pool (or of the Bound's own).
type feedback struct {
	arg int
	buf *devBuffer
}

// variant is a capture of a Bound's plan reading some arguments in place.
type variant struct {
	at []DevicePtr // per argument: the address read in place, or 0 (the Bound's buffer)
	g  *capturedGraph
}

// variantGraphs are a Bound's variants, the twin pool and the argument
// addresses whose capture failed (not tried again).
type variantGraphs struct {
	list   []*variant
	twin   *staticPool
	failed [][]DevicePtr
}

// pickGraph sets b.cur to the graph the next Launch replays and returns
// the arguments it reads in place (not to be copied): a variant when some
// Array arguments are results lent by a graph's pool, captured on first
// use; else b.graph (or nothing without a graph).
func (b *Bound) pickGraph(args []interp.Value) (inPlace []bool) {
	b.cur = b.graph
	if b.graph == nil {
		return nil
	}
	at := make([]DevicePtr, len(args))
	var fb []feedback
	lenders := make([]*staticPool, len(args))
	var arrays []*Array // the Array arguments, for mayWrite
	if b.plan.updates != nil {
		arrays = make([]*Array, len(args))
		for i, a := range args {
			arrays[i], _ = a.(*Array)
		}
	}
	for i, a := range args {
		arr, ok := a.(*Array)
		if !ok || b.args[i].b == nil || arr.released.Load() || arr.st.rt != b.rt {
			continue
		}
		arr.st.mu.Lock()
		lender, mem := arr.st.lender, arr.st.mem
		arr.st.mu.Unlock()
		if lender == nil || mem == nil || mem.bytes != arr.bytes() {
			continue
		}
		if b.plan.updates != nil && b.plan.updates[i] && !b.mayWrite(i, arrays) {
			continue // the plan would write it: copied first
		}
		at[i], lenders[i] = mem.ptr, lender
	}
	// The pool the replay writes holds none of what it reads in place:
	// the first capture's, unless an argument lies there; arguments in
	// the twin then are copied. The twin costs as much memory as the
	// first pool: made only for arguments worth an eighth of it (an
	// optimizer's state, KV caches; not batch norm's running statistics,
	// which are copied).
	first := b.graph.pool
	var twin *staticPool
	if b.variants != nil {
		twin = b.variants.twin
	}
	var own uint64
	for i, l := range lenders {
		if l == first {
			own += args[i].(*Array).bytes()
		}
	}
	writes := first
	if own > 0 && (twin != nil || own >= first.bytes/8) {
		writes = nil // the twin, made by the capture below if need be
	}
	for i, l := range lenders {
		if l == nil || writes == nil && l == twin || writes == first && l == first {
			at[i] = 0
			continue
		}
		arr := args[i].(*Array)
		fb = append(fb, feedback{arg: i, buf: &devBuffer{mem: &allocation{ptr: at[i], bytes: arr.bytes()}, elem: arr.elem, shape: arr.shape}})
	}
	if len(fb) == 0 {
		return nil
	}
	if b.variants == nil {
		b.variants = &variantGraphs{}
	}
	vg := b.variants
	var v *variant
	for _, c := range vg.list {
		if slices.Equal(c.at, at) && (c.g.pool == first) == (writes == first) {
			v = c
			break
		}
	}
	if v == nil {
		if len(vg.list) >= maxVariants || slices.ContainsFunc(vg.failed, func(f []DevicePtr) bool { return slices.Equal(f, at) }) {
			return nil
		}
		g, err := b.captureVariant(writes == first, fb)
		if err != nil {
			vg.failed = append(vg.failed, at)
			logs.Printf(TopicCUDAGraphs, "@%s: no graph reading %d arguments in place (%v); they are copied into the first capture's buffers", b.plan.name, len(fb), err)
			return nil
		}
		v = &variant{at: at, g: g}
		vg.list = append(vg.list, v)
		logs.Printf(TopicCUDAGraphs, "@%s: variant %d of its CUDA graph reads %d arguments in place (%.2f MiB)", b.plan.name, len(vg.list), len(fb), float64(inPlaceBytes(fb))/(1<<20))
	}
	b.cur = v.g
	inPlace = make([]bool, len(args))
	for _, f := range fb {
		inPlace[f.arg] = true
	}
	return inPlace
}

// inPlaceBytes is the memory fb reads in place.
func inPlaceBytes(fb []feedback) uint64 {
	var n uint64
	for _, f := range fb {
		n += f.buf.mem.bytes
	}
	return n
}

// captureVariant records the plan reading fb in place, writing the first
// capture's pool (first) or the twin pool, each made by its own first
// capture and replayed by the later ones.
func (b *Bound) captureVariant(first bool, fb []feedback) (*capturedGraph, error) {
	vg := b.variants
	if first {
		return b.record(b.graph.pool, &replaying{seq: b.graph.pool.seq}, fb)
	}
	if vg.twin != nil {
		return b.record(vg.twin, &replaying{seq: vg.twin.seq}, fb)
	}
	p := &staticPool{}
	g, err := b.record(p, p, fb)
	if err != nil {
		return nil, errors.Join(err, p.release(b.rt.alloc))
	}
	vg.twin = p
	return g, nil
}

// destroyGraphs destroys b's graphs and releases their pools, after the
// replays queued and moving the results still in use out.
func (b *Bound) destroyGraphs() error {
	var errs []error
	pools := []*staticPool{b.graph.pool}
	graphs := []*capturedGraph{b.graph}
	if vg := b.variants; vg != nil {
		for _, v := range vg.list {
			graphs = append(graphs, v.g)
		}
		if vg.twin != nil {
			pools = append(pools, vg.twin)
		}
	}
	for _, p := range pools {
		errs = append(errs, p.reclaim())
	}
	errs = append(errs, b.rt.dev.Synchronize())
	for _, g := range graphs {
		errs = append(errs, g.exec.destroy())
	}
	for _, p := range pools {
		errs = append(errs, p.release(b.rt.alloc))
	}
	return errors.Join(errs...)
}
