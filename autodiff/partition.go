package autodiff

import (
	"fmt"
	"slices"
	"strings"

	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// recomputable lists the ops the backward pass may recompute from saved
// values instead of having the forward pass save their results: cheap,
// memory-bound ops (pointwise math, layout changes, constants). Matmuls,
// convolutions, reductions, composites and anything not listed are never
// recomputed when the forward pass computes them anyway: their results are
// saved if the backward pass needs them.
var recomputable = map[string]bool{}

func init() {
	for _, name := range []string{
		graph.OpConstant, graph.OpIota, graph.OpFull, graph.OpNeg, graph.OpAbs, graph.OpExp, graph.OpLog, graph.OpSqrt, graph.OpRsqrt, graph.OpTanh, graph.OpSigmoid, graph.OpRelu, graph.OpGELU, graph.OpErf, graph.OpSin, graph.OpCos, graph.OpReciprocal, graph.OpAdd, graph.OpSub, graph.OpMul, graph.OpDiv, graph.OpPow, graph.OpMax, graph.OpMin, graph.OpCmp, graph.OpSelect, graph.OpCast, graph.OpReshape, graph.OpTranspose, graph.OpBroadcastTo, graph.OpConcat, graph.OpSlice, graph.OpPad,
	} {
		recomputable[name] = true
	}
}

// Report describes what Partition saves between the passes.
type Report struct {
	// Func is the name of the joint function.
	Func string
	// Saved are the values the forward pass returns for the backward pass,
	// in the order of the backward pass's first arguments.
	Saved []SavedValue
	// SavedBytes is the total size of Saved; SaveAllBytes is what saving
	// every forward value the backward pass reads would take.
	SavedBytes, SaveAllBytes int64
	// Recomputed counts the forward ops the backward pass recomputes.
	Recomputed int
}

// SavedValue is one value saved for the backward pass.
type SavedValue struct {
	// What names the value: "argument 1" or "'graph.matmul' at f.mlir:3:8".
	What  string
	Type  ir.Type
	Bytes int64
}

// String prints the report: a summary line, then one line per saved value.
func (r Report) String() string {
	var sb strings.Builder
	pct := 100.0
	if r.SaveAllBytes > 0 {
		pct = 100 * float64(r.SavedBytes) / float64(r.SaveAllBytes)
	}
	fmt.Fprintf(&sb, "@%s: saves %d values, %d bytes (saving everything the backward reads: %d bytes, %.0f%%); the backward recomputes %d ops\n",
		r.Func, len(r.Saved), r.SavedBytes, r.SaveAllBytes, pct, r.Recomputed)
	for i, s := range r.Saved {
		fmt.Fprintf(&sb, "  saved %d: %s : %s, %d bytes\n", i, s.What, s.Type, s.Bytes)
	}
	return sb.String()
}

// unknownBytes stands for the size of a value whose shape is not static:
// large, so that such values are saved only when nothing else will do.
const unknownBytes = int64(1) << 40

// sizeOf is the size of a value of type t in bytes (i1 counts one byte).
func sizeOf(t ir.Type) int64 {
	tt, ok := t.(*ir.TensorType)
	if !ok || !tt.Ranked() {
		return unknownBytes
	}
	n := ir.NumElements(tt.Shape())
	if n < 0 {
		return unknownBytes
	}
	return n * elemBytes(tt.ElementType())
}

// elemBytes is the storage size of one element, whole bytes.
func elemBytes(t ir.Type) int64 {
	bits := ir.IntWidth(t)
	if ft, ok := t.(*ir.FloatType); ok {
		bits = ft.Width
	}
	return int64(max(bits, 8)+7) / 8
}

// Partition splits a joint function made by Joint into a forward pass
// @<f>_fwd, which takes f's arguments and returns f's results followed by
// the saved values, and a backward pass @<f>_bwd, which takes the saved
// values followed by one cotangent per result of f and returns the
// gradients. Both are inserted after joint, which is left in place; both
// carry the attribute autodiff.saved, the number of saved values.
//
// What to save is a minimum cut, in bytes, between the forward pass's
// inputs and the backward pass's ops (the joint graph's min-cut
// rematerialization, as in AOTAutograd): every forward value is a node of
// capacity its size; ops in the recomputable table may be recomputed by
// the backward pass from saved values, while the others (matmul, conv2d,
// reductions, composites) are pinned to the forward pass when it computes
// them anyway. So cheap pointwise chains are recomputed from their
// smallest saved inputs, and matmul and reduction outputs are saved. So
// are the operands of the forward pass's matmuls and convolutions (a
// ReLU's output that the next convolution reads): the forward pass writes
// them to memory anyway, and recomputing one would read its inputs and
// write it again for the weight gradient's product, which reads it too
// (ResNet-50's training step: the residual chains recomputed in the
// backward pass moved 3 GB more). The report lists the saved values and
// compares their size with saving every forward value the backward pass
// reads, which the cut never exceeds.
func Partition(ctx *ir.Context, joint *ir.Operation) (fwd, bwd *ir.Operation, report Report, err error) {
	j, err := readJoint(joint)
	if err != nil {
		return nil, nil, Report{}, err
	}
	saved := j.minCut()
	report = j.report(saved)
	base := strings.TrimSuffix(j.name, JointSuffix)
	for _, name := range []string{base + FwdSuffix, base + BwdSuffix} {
		if err := checkFreeSymbol(joint, name); err != nil {
			return nil, nil, Report{}, err
		}
	}
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointAfter(joint)
	fwd, err = j.buildForward(b, base+FwdSuffix, saved)
	if err != nil {
		return nil, nil, Report{}, err
	}
	b.SetInsertionPointAfter(fwd)
	bwd, recomputed, err := j.buildBackward(b, base+BwdSuffix, saved)
	if err != nil {
		fwd.Erase()
		return nil, nil, Report{}, err
	}
	report.Recomputed = recomputed
	for _, fn := range []*ir.Operation{fwd, bwd} {
		fn.SetAttr(SavedAttr, ir.IntegerAttr{Value: int64(len(saved)), Type: ir.I64})
	}
	return fwd, bwd, report, nil
}

// jointFunc is a joint function read for partitioning.
type jointFunc struct {
	fn      *ir.Operation
	name    string
	body    *ir.Block
	ret     *ir.Operation
	primals int // arguments of f; the cotangents follow
	results int // results of f; the gradients follow
	// tangent holds the values that depend on a cotangent: the backward
	// pass computes them. Every other value is a forward value.
	tangent map[*ir.Value]bool
	// forward lists the forward values: the primal arguments, then the
	// results of forward ops in block order.
	forward []*ir.Value
	index   map[*ir.Value]int // position in forward
}

// readJoint checks that fn is a joint function and classifies its values.
func readJoint(fn *ir.Operation) (*jointFunc, error) {
	if fn.Name() != funcd.FuncOp || funcd.IsExternal(fn) || fn.Region(0).Front() != fn.Region(0).Back() {
		return nil, ir.Errorf(fn.Loc(), "'%s' op cannot be partitioned: expected a func.func with one block", fn.Name())
	}
	name := ir.SymbolName(fn)
	ft := funcd.Type(fn)
	p, ok := fn.Attr(PrimalsAttr).(ir.IntegerAttr)
	if !ok || ft == nil {
		return nil, ir.Errorf(fn.Loc(), "@%s is not a joint function: it has no %s attribute (make one with autodiff.Joint or graph-autodiff{joint=true})", name, PrimalsAttr)
	}
	body := funcd.Body(fn)
	j := &jointFunc{fn: fn, name: name, body: body, ret: body.Terminator(), primals: int(p.Value),
		tangent: map[*ir.Value]bool{}, index: map[*ir.Value]int{}}
	j.results = len(ft.Inputs) - j.primals
	if j.primals < 0 || j.results < 0 || j.results > len(ft.Results) {
		return nil, ir.Errorf(fn.Loc(), "@%s: %s = %d does not fit its %d arguments and %d results", name, PrimalsAttr, j.primals, len(ft.Inputs), len(ft.Results))
	}
	if j.ret == nil || j.ret.Name() != funcd.ReturnOp {
		return nil, ir.Errorf(fn.Loc(), "@%s: its body does not end in func.return", name)
	}
	for i, a := range body.Arguments() {
		if i >= j.primals {
			j.tangent[a] = true
		} else {
			j.addForward(a)
		}
	}
	for op := range body.All() {
		if op == j.ret {
			break
		}
		dep := slices.ContainsFunc(op.Operands(), func(v *ir.Value) bool { return j.tangent[v] })
		for _, r := range op.Results() {
			if dep {
				j.tangent[r] = true
			} else {
				j.addForward(r)
			}
		}
	}
	for i, v := range j.ret.Operands()[:j.results] {
		if j.tangent[v] {
			return nil, ir.Errorf(j.ret.Loc(), "@%s: result %d of the forward function depends on a cotangent", name, i)
		}
	}
	return j, nil
}

func (j *jointFunc) addForward(v *ir.Value) {
	j.index[v] = len(j.forward)
	j.forward = append(j.forward, v)
}

// readByBackward reports whether the backward pass reads forward value v
// directly: as an operand of a backward op or as a returned gradient.
func (j *jointFunc) readByBackward(v *ir.Value) bool {
	for u := range v.Uses() {
		owner := u.Owner()
		if owner == j.ret {
			if u.Index() >= j.results {
				return true
			}
			continue
		}
		if slices.ContainsFunc(owner.Results(), func(r *ir.Value) bool { return j.tangent[r] }) {
			return true
		}
	}
	return false
}

// minCut chooses the values to save, in the order of j.forward.
//
// The flow network has a node pair in→out per forward value, joined by an
// edge of the value's size; uncuttable edges run from out to the in of
// each forward op reading it, from the source to each primal argument
// and to each non-recomputable op and each operand of a matmul or
// convolution (templateOperands) the forward results need, and from the
// out of each value the backward reads to the sink. A cut of in→out edges
// separating source from sink is a set of saved values from which the
// backward pass can recompute everything it reads; constants, which no
// source path reaches, are recomputed for free.
func (j *jointFunc) minCut() []*ir.Value {
	n := len(j.forward)
	src, sink := 2*n, 2*n+1
	net := newFlowNet(2*n + 2)
	needed := j.neededByResults()
	materialized := j.templateOperands()
	for i, v := range j.forward {
		in, out := 2*i, 2*i+1
		net.edge(in, out, sizeOf(v.Type()))
		op := v.DefiningOp()
		if op == nil || (needed[v] && (!recomputable[op.Name()] || materialized[v])) {
			net.edge(src, in, inf)
		}
		if op != nil {
			for _, x := range op.Operands() {
				net.edge(2*j.index[x]+1, in, inf)
			}
		}
		if j.readByBackward(v) {
			net.edge(out, sink, inf)
		}
	}
	net.maxFlow(src, sink)
	side := net.reachable(src)
	var saved []*ir.Value
	for i, v := range j.forward {
		if side[2*i] >= 0 && side[2*i+1] < 0 {
			saved = append(saved, v)
		}
	}
	return saved
}

// templateOperands returns the forward values that a matmul or a
// convolution of the forward pass reads (through views): their kernels
// read them from memory, so the forward pass writes them whatever the
// cut, and saving one costs memory but no traffic, while recomputing it
// in the backward pass reads its inputs and writes it again (for the
// weight gradient's product, which reads it as well). A matrix transpose
// a matmul reads is not among them (matrixTranspose): the products take
// a transposed operand as it is, so the forward pass writes only its
// source, and a saved transpose would be a copy the forward pass makes
// only to save it (GPT-2's tied head reads the bf16 embedding table
// transposed: saving the transpose wrote a 77 MB copy every step; the
// backward pass now transposes the saved table, a view).
func (j *jointFunc) templateOperands() map[*ir.Value]bool {
	out := map[*ir.Value]bool{}
	for op := range j.body.All() {
		if op == j.ret || graph.ClassOf(op.Name()) != graph.ClassTemplate || slices.ContainsFunc(op.Results(), func(r *ir.Value) bool { return j.tangent[r] }) {
			continue
		}
		for _, x := range op.Operands() {
			for x != nil {
				def := x.DefiningOp()
				if def != nil && graph.ClassOf(def.Name()) == graph.ClassConstant {
					break // recomputed for free
				}
				if (op.Name() != graph.OpMatmul || !matrixTranspose(def)) && !reshapeOfStored(def) {
					out[x] = true
				}
				if def == nil || graph.ClassOf(def.Name()) != graph.ClassView {
					break
				}
				x = def.Operand(0)
			}
		}
	}
	return out
}

// reshapeOfStored reports whether op is a graph.reshape of a value that is
// no view: the forward pass writes that value, the reshape is the same
// buffer, and the value (a template operand too, as the walk goes on) is
// what is saved. A saved reshape would be a copy the forward pass makes
// only to return it (channels last, a 1×1 convolution's [O, C, 1, 1]
// weight read as a product's [O, C]: a copy of every such weight a step).
func reshapeOfStored(op *ir.Operation) bool {
	if op == nil || op.Name() != graph.OpReshape {
		return false
	}
	src := op.Operand(0).DefiningOp()
	return src != nil && graph.ClassOf(src.Name()) != graph.ClassView && graph.ClassOf(src.Name()) != graph.ClassConstant
}

// matrixTranspose reports whether op is a graph.transpose that swaps the
// last two dims only.
func matrixTranspose(op *ir.Operation) bool {
	if op == nil || op.Name() != graph.OpTranspose {
		return false
	}
	p, _ := graph.IntList(op.Attr("perm"))
	n := len(p)
	if n < 2 || p[n-2] != int64(n-1) || p[n-1] != int64(n-2) {
		return false
	}
	for i, d := range p[:n-2] {
		if d != int64(i) {
			return false
		}
	}
	return true
}

// neededByResults returns the forward values f's results depend on.
func (j *jointFunc) neededByResults() map[*ir.Value]bool {
	return slice(j.ret.Operands()[:j.results], nil)
}

// slice returns the values roots depend on, stopping at the values in
// stop (which are included when reached).
func slice(roots []*ir.Value, stop map[*ir.Value]bool) map[*ir.Value]bool {
	seen := map[*ir.Value]bool{}
	work := slices.Clone(roots)
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[v] {
			continue
		}
		seen[v] = true
		if op := v.DefiningOp(); op != nil && !stop[v] {
			work = append(work, op.Operands()...)
		}
	}
	return seen
}

// report sizes the saved values and the save-everything alternative.
func (j *jointFunc) report(saved []*ir.Value) Report {
	r := Report{Func: j.name}
	for _, v := range saved {
		s := SavedValue{What: j.describe(v), Type: v.Type(), Bytes: sizeOf(v.Type())}
		r.Saved = append(r.Saved, s)
		r.SavedBytes += s.Bytes
	}
	for _, v := range j.forward {
		if j.readByBackward(v) {
			r.SaveAllBytes += sizeOf(v.Type())
		}
	}
	return r
}

// describe names a forward value for the report.
func (j *jointFunc) describe(v *ir.Value) string {
	op := v.DefiningOp()
	if op == nil {
		return fmt.Sprintf("argument %d", slices.Index(j.body.Arguments(), v))
	}
	pos := ir.Position(op.Loc())
	if pos == "" {
		pos = strings.ReplaceAll(op.Loc().String(), `"`, "")
	}
	return fmt.Sprintf("'%s' at %s", op.Name(), pos)
}

// buildForward builds the forward pass: f's arguments to f's results and
// the saved values.
func (j *jointFunc) buildForward(b *ir.Builder, name string, saved []*ir.Value) (*ir.Operation, error) {
	outs := slices.Concat(j.ret.Operands()[:j.results], saved)
	ft := funcd.Type(j.fn)
	fn, body := funcd.NewFunc(b, name, ir.FunctionOf(ft.Inputs[:j.primals], types(outs)), j.fn.Loc())
	m := map[*ir.Value]*ir.Value{}
	for i := range j.primals {
		m[j.body.Argument(i)] = body.Argument(i)
	}
	j.copyOps(body, slice(outs, nil), m)
	b.SetInsertionPointToEnd(body)
	funcd.Return(b, j.ret.Loc(), mapped(outs, m)...)
	return fn, nil
}

// buildBackward builds the backward pass: the saved values and the
// cotangents to the gradients. It returns how many forward ops it
// recomputes.
func (j *jointFunc) buildBackward(b *ir.Builder, name string, saved []*ir.Value) (*ir.Operation, int, error) {
	ft := funcd.Type(j.fn)
	cts := j.body.Arguments()[j.primals:]
	outs := j.ret.Operands()[j.results:]
	fn, body := funcd.NewFunc(b, name, ir.FunctionOf(slices.Concat(types(saved), types(cts)), ft.Results[j.results:]), j.fn.Loc())
	m := map[*ir.Value]*ir.Value{}
	stop := map[*ir.Value]bool{}
	for i, v := range saved {
		m[v], stop[v] = body.Argument(i), true
	}
	for i, c := range cts {
		m[c] = body.Argument(len(saved) + i)
	}
	need := slice(outs, stop)
	for v := range need {
		if _, ok := m[v]; !ok && v.DefiningOp() == nil {
			fn.Erase()
			return nil, 0, ir.Errorf(j.fn.Loc(), "internal error: the backward pass of @%s reads %s, which is not saved", j.name, j.describe(v))
		}
	}
	for v := range stop {
		delete(need, v)
	}
	recomputed := j.copyOps(body, need, m)
	b.SetInsertionPointToEnd(body)
	funcd.Return(b, j.ret.Loc(), mapped(outs, m)...)
	return fn, recomputed, nil
}

// copyOps appends to body, in block order, a clone of each op of the
// joint function defining a value in need, and returns how many of them
// are forward ops.
func (j *jointFunc) copyOps(body *ir.Block, need map[*ir.Value]bool, m map[*ir.Value]*ir.Value) int {
	n := 0
	for op := range j.body.All() {
		if op == j.ret || !slices.ContainsFunc(op.Results(), func(v *ir.Value) bool { return need[v] }) {
			continue
		}
		body.Append(op.Clone(m))
		if !j.tangent[op.Result(0)] {
			n++
		}
	}
	return n
}

func types(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type()
	}
	return ts
}

func mapped(vs []*ir.Value, m map[*ir.Value]*ir.Value) []*ir.Value {
	out := make([]*ir.Value, len(vs))
	for i, v := range vs {
		out[i] = m[v]
	}
	return out
}
