package exec

import (
	"errors"
	"slices"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/interp"
)

// This file is the twin graphs of a loop that feeds a CUDA graph's
// results back into its next call, donated: a decoding step's KV caches.
// A graph reads its arguments at the addresses it was captured with, its
// own buffers, so each fed-back result would be copied into them every
// call. Two more captures of the plan read them where the previous replay
// left them instead: b reads them in the pool of the first capture
// (Bound.graph) and writes a pool of its own; c reads them in b's pool and
// writes the first capture's pool, each value where the first capture
// put it (its allocations replay that capture's). A loop then alternates
// b and c and copies none of the fed-back results; an argument of any
// other origin takes the first capture, with its copies, as before.

// feedback is an argument a twin graph reads in place: argument arg is
// result res of the graph that wrote the pool the twin reads, at buf.
type feedback struct {
	arg, res int
	buf      *devBuffer
}

// twinGraphs are a Bound's twins (b and c above) for one set of fed-back
// arguments; c is captured when first needed. failed stops the Bound
// from trying again after a capture that did not work out.
type twinGraphs struct {
	pairs  []feedback // arg ← res, read from the first capture's pool by b
	b, c   *capturedGraph
	failed bool
}

// pickGraph sets b.cur to the graph the next Launch replays and returns
// the arguments it reads in place (not to be copied): a twin when every
// donated argument that is a result of one of b's graphs comes from the
// same pool, as the twins were captured for; else b.graph (or nothing
// without a graph).
func (b *Bound) pickGraph(args []interp.Value, donated []bool) (inPlace []bool) {
	b.cur = b.graph
	if b.graph == nil || len(donated) == 0 {
		return nil
	}
	var pool *staticPool
	var fb []feedback
	for i, d := range donated {
		arr, ok := args[i].(*Array)
		if !d || !ok || arr.released.Load() {
			continue
		}
		arr.st.mu.Lock()
		lender, mem := arr.st.lender, arr.st.mem
		arr.st.mu.Unlock()
		if lender == nil || (pool != nil && lender != pool) {
			return nil
		}
		g := b.graph
		if t := b.twins; t != nil && t.b != nil && lender == t.b.pool {
			g = t.b
		} else if lender != b.graph.pool {
			return nil
		}
		j := slices.IndexFunc(g.results, func(r slotValue) bool {
			return r.b != nil && r.b.mem.ptr == mem.ptr && r.b.elem == arr.elem && slices.Equal(r.b.shape, arr.shape)
		})
		if j < 0 {
			return nil
		}
		pool = lender
		fb = append(fb, feedback{arg: i, res: j, buf: r2buf(g.results[j].b)})
	}
	if len(fb) == 0 {
		return nil
	}
	t := b.twins
	if t == nil {
		t = &twinGraphs{pairs: fb}
		b.twins = t
		p := &staticPool{}
		g, err := b.record(p, p, fb)
		if err != nil {
			_ = p.release(b.rt.alloc)
			b.twinFailed(err)
			return nil
		}
		t.b = g
		logs.Printf(TopicCUDAGraphs, "@%s: a twin graph reads %d fed-back arguments in place", b.plan.name, len(fb))
	}
	if t.failed || !samePairs(t.pairs, fb) {
		return nil
	}
	if pool == b.graph.pool {
		b.cur = t.b
	} else {
		if t.c == nil {
			c, err := b.record(b.graph.pool, &replaying{seq: b.graph.pool.seq}, fb)
			if err == nil && !sameResults(c, b.graph, fb) {
				_ = c.exec.destroy()
				err = errors.New("its fed-back results are not where the first capture put them")
			}
			if err != nil {
				b.twinFailed(err)
				return nil
			}
			t.c = c
		}
		b.cur = t.c
	}
	inPlace = make([]bool, len(args))
	for _, f := range fb {
		inPlace[f.arg] = true
	}
	return inPlace
}

// r2buf returns a view of result buffer r that the twin's plan does not
// own.
func r2buf(r *devBuffer) *devBuffer {
	return &devBuffer{mem: &allocation{ptr: r.mem.ptr, bytes: r.mem.bytes}, elem: r.elem, shape: r.shape}
}

// samePairs reports whether x and y feed the same results to the same
// arguments.
func samePairs(x, y []feedback) bool {
	return slices.EqualFunc(x, y, func(a, b feedback) bool { return a.arg == b.arg && a.res == b.res })
}

// sameResults reports whether c left every fed-back result where g did.
func sameResults(c, g *capturedGraph, fb []feedback) bool {
	for _, f := range fb {
		if rc, rg := c.results[f.res].b, g.results[f.res].b; rc == nil || rg == nil || rc.mem.ptr != rg.mem.ptr {
			return false
		}
	}
	return true
}

// twinFailed gives up the twins, logging why: the first capture keeps
// serving every call.
func (b *Bound) twinFailed(err error) {
	logs.Printf(TopicCUDAGraphs, "@%s: no twin graph for its fed-back arguments (%v); they are copied into the graph", b.plan.name, err)
	b.twins.failed = true
}

// destroyGraphs destroys b's graphs and releases their pools, after the
// replays queued and moving the results still in use out.
func (b *Bound) destroyGraphs() error {
	var errs []error
	pools := []*staticPool{b.graph.pool}
	graphs := []*capturedGraph{b.graph}
	if t := b.twins; t != nil {
		for _, g := range []*capturedGraph{t.b, t.c} {
			if g != nil {
				graphs = append(graphs, g)
				if !slices.Contains(pools, g.pool) {
					pools = append(pools, g.pool)
				}
			}
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
