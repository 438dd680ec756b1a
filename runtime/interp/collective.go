package interp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// The collectives of the graph dialect (all_reduce, all_gather,
// reduce_scatter, broadcast, reduce_to) run over a Communicator, one per
// rank: every rank's interpreter runs the same function on its own inputs
// and meets the others at each collective. RunRanks simulates a world of N
// ranks in one process, one goroutine per rank. An interpreter without a
// Communicator is a world of one rank, where every collective gives its
// operand back (all_reduce of one rank is its operand; avg divides by 1).
//
// Every rank reaches the same result from the same contributions: sums add
// the ranks' values in rank order, in the accumulation precision of the
// element type (float32 for f32, f16 and bf16, float64 for f64), and round
// once to the element type; integers wrap.

// Contribution is what one rank brings to a collective: the op, its
// attributes that must agree across ranks, and its operand.
type Contribution struct {
	// Op is the collective's op name (graph.all_reduce…).
	Op string
	// Group is the process group.
	Group string
	// Attrs spells the attributes every rank must agree on (reduce, axis,
	// root) for the error message of a mismatch.
	Attrs string
	// Value is this rank's operand.
	Value *Tensor
	// Loc is where the op is, for diagnostics.
	Loc ir.Location
}

// Communicator is one rank's membership of a world of ranks.
type Communicator interface {
	// Rank and Size give the rank's place in group and the group's size;
	// an unknown group is an error.
	Rank(group string) (rank, size int, err error)
	// Exchange hands c to the rank's next collective on c.Group and returns
	// every rank's operand, in rank order, once all have arrived. Ranks
	// that disagree on the op, its attributes or the operand's type get an
	// error naming both.
	Exchange(c Contribution) ([]*Tensor, error)
}

// WithCommunicator makes the interpreter one rank of the world of c.
func WithCommunicator(c Communicator) Option { return func(in *Interpreter) { in.comm = c } }

// solo is the world of one rank, every group's only member.
type solo struct{}

func (solo) Rank(string) (int, int, error) { return 0, 1, nil }

func (solo) Exchange(c Contribution) ([]*Tensor, error) { return []*Tensor{c.Value}, nil }

func init() {
	table := map[string]Rule{loop.CollectiveOp: loopCollective}
	for _, name := range []string{graph.OpAllReduce, graph.OpAllGather, graph.OpReduceScatter, graph.OpBroadcast, graph.OpReduceTo} {
		table[name] = graphCollective
	}
	registerAll(table)
}

// collSpec is one collective: the graph op's short name and attributes.
type collSpec struct {
	kind, reduce, group string
	axis, root          int64
}

func specOfGraph(op *ir.Operation) collSpec {
	return collSpec{kind: strings.TrimPrefix(op.Name(), graph.Name+"."), reduce: graph.ReduceKind(op), group: graph.Group(op),
		axis: graph.Axis(op), root: graph.Root(op)}
}

// attrs spells the attributes that every rank must share.
func (c collSpec) attrs() string {
	switch c.kind {
	case "all_reduce":
		return "reduce = " + c.reduce
	case "all_gather":
		return fmt.Sprintf("axis = %d", c.axis)
	case "reduce_scatter":
		return fmt.Sprintf("axis = %d, reduce = %s", c.axis, c.reduce)
	}
	return fmt.Sprintf("root = %d", c.root)
}

// graphCollective runs a graph collective and checks its result against
// the op's declared result type.
func graphCollective(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ts, err := tensorArgs(args)
	if err != nil {
		return nil, err
	}
	c := specOfGraph(op)
	out, size, err := f.collective(c, ts[0], op.Loc())
	if err != nil {
		return nil, err
	}
	if err := fitsType(out, op.Result(0).Type(), c.group, size); err != nil {
		return nil, err
	}
	return []Value{out}, nil
}

// loopCollective runs loop.collective: source read, dest written.
func loopCollective(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	src, err := bufferArg(args[0])
	if err != nil {
		return nil, err
	}
	dst, err := bufferArg(args[1])
	if err != nil {
		return nil, err
	}
	x, err := src.Tensor()
	if err != nil {
		return nil, err
	}
	lc := loop.CollectiveOf(op)
	c := collSpec{kind: lc.Kind, reduce: lc.Reduce, group: lc.Group, axis: lc.Axis, root: lc.Root}
	out, size, err := f.collective(c, x, op.Loc())
	if err != nil {
		return nil, err
	}
	if dst.freed {
		return nil, errFreed
	}
	if !slices.Equal(out.shape, dst.shape) || out.elem != dst.elem {
		return nil, fmt.Errorf("over group %q of %d ranks the result is %s, but the destination is %s (compiled for another number of ranks?)", c.group, size, out, dst)
	}
	// Copy in place: views of dest share its storage.
	reflect.Copy(reflect.ValueOf(dst.data), reflect.ValueOf(out.data))
	return nil, nil
}

// fitsType checks a collective's result against its declared type.
func fitsType(out *Tensor, t ir.Type, group string, size int) error {
	rt, ok := t.(*ir.TensorType)
	if !ok || !rt.Ranked() {
		return nil
	}
	for d, n := range rt.Shape() {
		if len(rt.Shape()) != len(out.shape) || n != ir.Dynamic && n != out.shape[d] {
			return fmt.Errorf("over group %q of %d ranks the result is %s, but its type is %s (compiled for another number of ranks?)", group, size, out, rt)
		}
	}
	return nil
}

// collective exchanges x with the other ranks of the frame's world and
// computes this rank's result; it also returns the group's size.
func (f *Frame) collective(c collSpec, x *Tensor, loc ir.Location) (*Tensor, int, error) {
	comm := f.in.comm
	if comm == nil {
		comm = solo{}
	}
	rank, size, err := comm.Rank(c.group)
	if err != nil {
		return nil, 0, err
	}
	if (c.kind == "broadcast" || c.kind == "reduce_to") && c.root >= int64(size) {
		return nil, 0, fmt.Errorf("root %d is not a rank of group %q, which has %d", c.root, c.group, size)
	}
	all, err := comm.Exchange(Contribution{Op: graph.Name + "." + c.kind, Group: c.group, Attrs: c.attrs(), Value: x, Loc: loc})
	if err != nil {
		return nil, 0, err
	}
	var out *Tensor
	switch c.kind {
	case "all_reduce":
		out, err = combine(c.reduce, all)
	case "all_gather":
		out, err = allGather(c, all)
	case "reduce_scatter":
		out, err = reduceScatter(c, rank, all)
	case "broadcast":
		out = all[c.root]
	case "reduce_to":
		if int64(rank) != c.root {
			out, err = NewTensor(x.elem, x.shape)
		} else {
			out, err = combine("sum", all)
		}
	default:
		err = fmt.Errorf("unknown collective %q", c.kind)
	}
	return out, size, err
}

// axisOf resolves the collective's axis for a tensor of rank n.
func (c collSpec) axisOf(n int) (int, error) {
	a := c.axis
	if a < 0 {
		a += int64(n)
	}
	if a < 0 || a >= int64(n) {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", c.axis, n)
	}
	return int(a), nil
}

// combine reduces the ranks' tensors elementwise in rank order: "sum",
// "max" (NaN wins) or "avg" (the sum divided by the count, floats only).
func combine(kind string, all []*Tensor) (*Tensor, error) {
	x := all[0]
	if ir.IsFloat(x.elem) {
		acc, r := accRounder(x.elem), rounder(x.elem)
		vals := x.Float64s()
		for _, t := range all[1:] {
			for i, v := range t.Float64s() {
				switch {
				case kind != "max":
					vals[i] = acc(vals[i] + v)
				case math.IsNaN(vals[i]):
				case math.IsNaN(v) || v > vals[i]:
					vals[i] = v
				}
			}
		}
		for i, v := range vals {
			if kind == "avg" {
				v = acc(v / float64(len(all)))
			}
			vals[i] = r(v)
		}
		return FromFloat64s(x.elem, x.shape, vals)
	}
	if kind == "avg" {
		return nil, fmt.Errorf("reduce = \"avg\" needs floats, got %s", x)
	}
	vals := x.Int64s()
	for _, t := range all[1:] {
		for i, v := range t.Int64s() {
			if kind == "max" {
				vals[i] = max(vals[i], v)
			} else {
				vals[i] += v
			}
		}
	}
	return FromInt64s(x.elem, x.shape, vals)
}

func allGather(c collSpec, all []*Tensor) (*Tensor, error) {
	x := all[0]
	axis, err := c.axisOf(len(x.shape))
	if err != nil {
		return nil, err
	}
	shape := slices.Clone(x.shape)
	shape[axis] *= int64(len(all))
	outer, n, inner := axisLayout(x.shape, axis)
	chunk := n * inner
	out := make([]uint64, 0, len(all)*x.Len())
	bits := make([][]uint64, len(all))
	for r, t := range all {
		bits[r] = t.Bits()
	}
	for o := range outer {
		for r := range all {
			out = append(out, bits[r][o*chunk:(o+1)*chunk]...)
		}
	}
	return FromBits(x.elem, shape, out)
}

func reduceScatter(c collSpec, rank int, all []*Tensor) (*Tensor, error) {
	x := all[0]
	axis, err := c.axisOf(len(x.shape))
	if err != nil {
		return nil, err
	}
	size := int64(len(all))
	if x.shape[axis]%size != 0 {
		return nil, fmt.Errorf("cannot scatter %s along axis %d into %d equal slices", x, axis, size)
	}
	sum, err := combine(c.reduce, all)
	if err != nil {
		return nil, err
	}
	shape := slices.Clone(x.shape)
	shape[axis] /= size
	outer, n, inner := axisLayout(x.shape, axis)
	part := int(shape[axis]) * inner
	bits := sum.Bits()
	out := make([]uint64, 0, outer*part)
	for o := range outer {
		start := o*n*inner + rank*part
		out = append(out, bits[start:start+part]...)
	}
	return FromBits(x.elem, shape, out)
}

// RunRanks runs the function fn of module on worldSize simulated ranks at
// once, one goroutine and one interpreter per rank, rank r on
// inputsPerRank[r], and returns each rank's results. The ranks form the
// group "world" and meet at every collective; a rank that fails, that
// disagrees with the others at a collective or that returns while others
// wait for it stops them all, and the error names the rank. Cancelling ctx
// stops the ranks at their next collective.
func RunRanks(ctx context.Context, module *ir.Operation, fn string, worldSize int, inputsPerRank [][]Value, opts ...Option) ([][]Value, error) {
	if worldSize < 1 {
		return nil, fmt.Errorf("interp.RunRanks: the world size must be at least 1, got %d", worldSize)
	}
	if len(inputsPerRank) != worldSize {
		return nil, fmt.Errorf("interp.RunRanks: %d ranks need %d input lists, got %d", worldSize, worldSize, len(inputsPerRank))
	}
	w := NewWorld(worldSize)
	stop := context.AfterFunc(ctx, func() { w.Abort(ctx.Err()) })
	defer stop()
	results := make([][]Value, worldSize)
	var (
		mu    sync.Mutex
		first = -1 // the first rank to fail: the others were stopped by it
		errs  = make([]error, worldSize)
		wg    sync.WaitGroup
	)
	for r := range worldSize {
		wg.Go(func() {
			in := New(module, append(slices.Clone(opts), WithCommunicator(w.Rank(r)))...)
			res, err := in.Call(fn, inputsPerRank[r]...)
			if err != nil {
				mu.Lock()
				errs[r] = err
				if first < 0 {
					first = r
				}
				mu.Unlock()
				w.Abort(fmt.Errorf("rank %d failed", r))
				return
			}
			results[r] = res
			w.finish(r)
		})
	}
	wg.Wait()
	if first >= 0 {
		return nil, fmt.Errorf("rank %d: %w", first, errs[first])
	}
	return results, nil
}

// errStopped marks the error of a rank stopped by another's failure.
var errStopped = errors.New("stopped")

// World is a simulated world of ranks in one process, whose members meet
// at each collective (a rendezvous per collective, in program order).
type World struct {
	size     int
	mu       sync.Mutex
	rounds   map[int]*round
	finished []bool
	stopped  error
	stop     chan struct{}
}

// round is one collective: the contributions so far and its outcome.
type round struct {
	seq     int
	contrib []*Contribution
	arrived int
	readers int
	done    chan struct{}
	all     []*Tensor
	err     error
}

// NewWorld returns a world of size ranks ("world" is their only group).
func NewWorld(size int) *World {
	return &World{size: size, rounds: map[int]*round{}, finished: make([]bool, size), stop: make(chan struct{})}
}

// Rank returns rank r's Communicator.
func (w *World) Rank(r int) Communicator { return &rankComm{w: w, rank: r} }

// Abort stops every rank waiting or arriving at a collective with an error
// wrapping err.
func (w *World) Abort(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abortLocked(err)
}

func (w *World) abortLocked(err error) {
	if w.stopped == nil {
		w.stopped = fmt.Errorf("%w: %w", errStopped, err)
		close(w.stop)
	}
}

// finish records that rank r returned: a collective it never joined can
// no longer complete.
func (w *World) finish(r int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished[r] = true
	for _, rd := range w.rounds {
		w.checkRoundLocked(rd)
	}
}

// checkRoundLocked aborts the world when a rank that returned is missing
// from the unfinished round rd.
func (w *World) checkRoundLocked(rd *round) {
	if rd.arrived == w.size {
		return
	}
	for r, c := range rd.contrib {
		if c == nil && w.finished[r] {
			waiting := slices.IndexFunc(rd.contrib, func(c *Contribution) bool { return c != nil })
			c := rd.contrib[waiting]
			w.abortLocked(fmt.Errorf("rank %d returned without joining collective #%d (%s on group %q at %s), which rank %d waits in",
				r, rd.seq, c.Op, c.Group, c.Loc, waiting))
			return
		}
	}
}

// rankComm is one rank's Communicator of a World.
type rankComm struct {
	w    *World
	rank int
	seq  int
}

func (c *rankComm) Rank(group string) (int, int, error) {
	if group != graph.WorldGroup {
		return 0, 0, fmt.Errorf("unknown process group %q (the simulated world has only %q)", group, graph.WorldGroup)
	}
	return c.rank, c.w.size, nil
}

func (c *rankComm) Exchange(x Contribution) ([]*Tensor, error) {
	w := c.w
	seq := c.seq
	c.seq++
	w.mu.Lock()
	if w.stopped != nil {
		defer w.mu.Unlock()
		return nil, w.stopped
	}
	rd := w.rounds[seq]
	if rd == nil {
		rd = &round{seq: seq, contrib: make([]*Contribution, w.size), done: make(chan struct{})}
		w.rounds[seq] = rd
	}
	rd.contrib[c.rank] = &x
	rd.arrived++
	if rd.arrived == w.size {
		rd.all, rd.err = agree(seq, rd.contrib)
		close(rd.done)
	} else {
		w.checkRoundLocked(rd)
	}
	w.mu.Unlock()
	select {
	case <-rd.done:
	case <-w.stop:
		w.mu.Lock()
		defer w.mu.Unlock()
		return nil, w.stopped
	}
	w.mu.Lock()
	rd.readers++
	if rd.readers == w.size {
		delete(w.rounds, seq)
	}
	w.mu.Unlock()
	if rd.err != nil {
		return nil, rd.err
	}
	return rd.all, nil
}

// agree checks that every rank brought the same collective on the same
// group with the same attributes and operand type, and returns the
// operands in rank order.
func agree(seq int, contrib []*Contribution) ([]*Tensor, error) {
	c0 := contrib[0]
	all := make([]*Tensor, len(contrib))
	for r, c := range contrib {
		all[r] = c.Value
		if c.Op != c0.Op || c.Group != c0.Group || c.Attrs != c0.Attrs || c.Value.elem != c0.Value.elem || !slices.Equal(c.Value.shape, c0.Value.shape) {
			return nil, fmt.Errorf("collective #%d does not agree across ranks: rank 0 runs %s (%s) on group %q with %s at %s, rank %d runs %s (%s) on group %q with %s at %s",
				seq, c0.Op, c0.Attrs, c0.Group, c0.Value, c0.Loc, r, c.Op, c.Attrs, c.Group, c.Value, c.Loc)
		}
	}
	return all, nil
}
