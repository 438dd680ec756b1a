// Package interp is Strata's reference interpreter: it runs a function of a
// module at any level that has interpreter rules, one op at a time, and is
// the oracle that passes and the GPU backend are tested against.
//
// Each op's meaning is a Rule, registered by op name in a table kept per
// dialect (arith.go, func.go, math.go, ...); grep for arith.OpAddF to find it.
// Rules compute on whole tensors with loops over typed storage (see Tensor),
// so elementwise work runs at native speed in the element type's precision.
// Scalar arithmetic is shared with the dialects' folders (dialects/arith's
// EvalInt, EvalFloat, CmpI, CmpF and Cast), so folding and execution agree.
//
// Errors are located diagnostics: a call with wrong arguments, an op without
// a rule, division by zero or a runaway recursion never panics.
package interp

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// Rule executes op, whose operands hold args, and returns one value per
// result. A terminator's rule returns the values it passes to its parent op
// (func.return's operands, say) or, for a branch, calls Frame.Branch.
// Errors without a location are reported at op's location.
type Rule func(f *Frame, op *ir.Operation, args []Value) ([]Value, error)

var (
	rulesMu sync.RWMutex
	rules   = map[string]Rule{}
)

// Register makes r the rule for ops named name, in every Interpreter created
// afterwards. Dialect rule files register their tables from init; other
// packages may add rules for their own ops.
func Register(name string, r Rule) {
	rulesMu.Lock()
	defer rulesMu.Unlock()
	rules[name] = r
}

// registerAll registers a table of rules.
func registerAll(table map[string]Rule) {
	for name, r := range table {
		Register(name, r)
	}
}

// HasRule reports whether ops named name have a registered rule.
func HasRule(name string) bool {
	rulesMu.RLock()
	defer rulesMu.RUnlock()
	return rules[name] != nil
}

// DefaultMaxDepth is the default limit on nested calls.
const DefaultMaxDepth = 1000

// Interpreter runs the functions of one module.
type Interpreter struct {
	module   *ir.Operation
	rules    map[string]Rule
	maxDepth int
	maxOps   int64        // 0: no limit
	ops      atomic.Int64 // ops run so far, counted when maxOps is set
	// comm is the rank's process group world for the collectives
	// (collective.go); nil is a world of one rank.
	comm Communicator
}

// Option configures an Interpreter.
type Option func(*Interpreter)

// WithMaxDepth limits the depth of nested calls (DefaultMaxDepth by default);
// deeper recursion is reported as an error.
func WithMaxDepth(n int) Option { return func(in *Interpreter) { in.maxDepth = n } }

// WithMaxOps limits the ops the interpreter runs, over all its calls, to
// n (0: no limit); the op beyond fails with a located error. irc run's
// --max-ops and the fuzz targets use it to bound programs that loop for
// long.
func WithMaxOps(n int64) Option { return func(in *Interpreter) { in.maxOps = n } }

// OpsRun returns the ops run so far over all calls; they are counted only
// when WithMaxOps set a limit (0 otherwise).
func (in *Interpreter) OpsRun() int64 { return in.ops.Load() }

// WithRule adds or replaces the rule for ops named name in this interpreter only.
func WithRule(name string, r Rule) Option { return func(in *Interpreter) { in.rules[name] = r } }

// New returns an interpreter for module (usually a builtin.module).
func New(module *ir.Operation, opts ...Option) *Interpreter {
	rulesMu.RLock()
	in := &Interpreter{module: module, rules: maps.Clone(rules), maxDepth: DefaultMaxDepth}
	rulesMu.RUnlock()
	for _, o := range opts {
		o(in)
	}
	return in
}

// Module returns the module the interpreter runs.
func (in *Interpreter) Module() *ir.Operation { return in.module }

// Call runs the function named funcName (a func.func directly in the module)
// on args and returns its results.
func (in *Interpreter) Call(funcName string, args ...Value) ([]Value, error) {
	fn := in.Func(funcName)
	if fn == nil {
		return nil, ir.Errorf(in.module.Loc(), "no function named @%s in the module", funcName)
	}
	return in.call(nil, fn, args, 0)
}

// Func returns the func.func named name directly in the module, or nil.
func (in *Interpreter) Func(name string) *ir.Operation {
	for _, r := range in.module.Regions() {
		for b := r.Front(); b != nil; b = b.Next() {
			for op := b.First(); op != nil; op = op.Next() {
				if op.Name() == funcs.OpFunc && ir.SymbolName(op) == name {
					return op
				}
			}
		}
	}
	return nil
}

// call runs the function fn; site is the calling op (nil for Call), whose
// location is added as a note to errors raised inside.
func (in *Interpreter) call(site *ir.Operation, fn *ir.Operation, args []Value, depth int) ([]Value, error) {
	errAt := fn.Loc()
	if site != nil {
		errAt = site.Loc()
	}
	ft, err := FuncType(fn)
	if err != nil {
		return nil, ir.Errorf(errAt, "%v", err)
	}
	name := ir.SymbolName(fn)
	if depth >= in.maxDepth {
		return nil, ir.Errorf(errAt, "call depth limit of %d exceeded calling @%s (unbounded recursion?)", in.maxDepth, name)
	}
	if len(args) != len(ft.Inputs) {
		return nil, ir.Errorf(errAt, "@%s takes %d arguments, got %d", name, len(ft.Inputs), len(args))
	}
	for i, a := range args {
		if a == nil {
			return nil, ir.Errorf(errAt, "@%s argument %d: missing value", name, i)
		}
		if err := checkValue(a, ft.Inputs[i]); err != nil {
			return nil, ir.Errorf(errAt, "@%s argument %d: %v", name, i, err)
		}
	}
	syms, err := checkSymbolicSizes(ft.Inputs, args)
	if err != nil {
		return nil, ir.Errorf(errAt, "@%s %v", name, err)
	}
	if fn.NumRegions() == 0 || fn.Region(0).Empty() {
		return nil, ir.Errorf(errAt, "@%s is a declaration without a body", name)
	}
	f := &Frame{in: in, values: map[*ir.Value]Value{}, depth: depth, syms: syms}
	results, err := f.RunRegion(fn.Region(0), args)
	if err != nil {
		var d *ir.Diagnostic
		if site != nil && errors.As(err, &d) {
			noteCallSite(d, site.Loc())
		}
		return nil, err
	}
	if len(results) != len(ft.Results) {
		return nil, ir.Errorf(fn.Loc(), "@%s returned %d values, its type declares %d", name, len(results), len(ft.Results))
	}
	for i, r := range results {
		if err := checkValue(r, ft.Results[i]); err != nil {
			return nil, ir.Errorf(fn.Loc(), "@%s result %d: %v", name, i, err)
		}
	}
	return results, nil
}

// checkSymbolicSizes checks arguments against the symbolic sizes of the
// #graph.dims encodings of their types: one value for each symbol, and
// sizes that are expressions of them computed right. It returns the
// symbols' values (nil when no type has an encoding).
func checkSymbolicSizes(types []ir.Type, args []Value) (map[string]int64, error) {
	var shapes [][]int64
	for i, t := range types {
		if tt, ok := t.(*ir.TensorType); ok && tt.Encoding != nil {
			if shapes == nil {
				shapes = make([][]int64, len(types))
			}
			shapes[i] = args[i].Shape()
		}
	}
	if shapes == nil {
		return nil, nil
	}
	return graph.CheckShapes(types, shapes)
}

// maxCallNotes is how many "called from here" notes an error carries: the
// innermost calls; the last note counts the calls further out.
const maxCallNotes = 10

// noteCallSite adds the call site at loc to d's call-stack notes, up to
// maxCallNotes of them (a runaway recursion would add one per level).
func noteCallSite(d *ir.Diagnostic, loc ir.Location) {
	const here = "called from here"
	n, last := 0, -1
	for i, note := range d.Notes {
		if strings.HasPrefix(note.Message, here) {
			n, last = n+1, i
		}
	}
	if n < maxCallNotes {
		d.Note(loc, here)
		return
	}
	more := 1
	if _, rest, ok := strings.Cut(d.Notes[last].Message, "; "); ok {
		fmt.Sscanf(rest, "and from %d", &more)
		more++
	}
	d.Notes[last].Message = fmt.Sprintf("%s; and from %d calls further out", here, more)
}

// FuncType returns the type of the func.func fn.
func FuncType(fn *ir.Operation) (*ir.FunctionType, error) {
	if ta, ok := fn.Attr("function_type").(ir.TypeAttr); ok {
		if ft, ok := ta.Type.(*ir.FunctionType); ok {
			return ft, nil
		}
	}
	return nil, fmt.Errorf("'%s' op @%s has no function_type", fn.Name(), ir.SymbolName(fn))
}

// Frame is the state of one function activation: the values of the SSA
// values defined so far. Rules for region-holding ops use it to run their
// regions.
type Frame struct {
	in     *Interpreter
	values map[*ir.Value]Value
	depth  int
	// branch is the successor chosen by the terminator being executed.
	branch     *ir.Block
	branchArgs []Value
	// syms are the values of the #graph.dims symbols that size the
	// function's arguments (graph.iota's dynamic sizes read them).
	syms map[string]int64
}

// Interpreter returns the interpreter the frame belongs to.
func (f *Frame) Interpreter() *Interpreter { return f.in }

// Value returns the runtime value of v, or nil if v has not been computed.
func (f *Frame) Value(v *ir.Value) Value { return f.values[v] }

// Call runs the function fn from the op site, one level deeper.
func (f *Frame) Call(site, fn *ir.Operation, args []Value) ([]Value, error) {
	return f.in.call(site, fn, args, f.depth+1)
}

// Branch, called by a terminator's rule, continues execution at block dest
// of the same region with args bound to its arguments.
func (f *Frame) Branch(dest *ir.Block, args []Value) {
	f.branch, f.branchArgs = dest, args
}

// RunRegion runs r from its entry block, whose arguments take args, and
// follows branches until a terminator leaves the region; it returns the
// values that terminator passes to the parent op. A block that ends without
// a terminator leaves the region with no values.
func (f *Frame) RunRegion(r *ir.Region, args []Value) ([]Value, error) {
	b := r.Front()
	if b == nil {
		return nil, nil
	}
	for {
		if err := f.bindBlockArgs(b, args); err != nil {
			return nil, err
		}
		next, out, err := f.runBlock(b)
		if err != nil || next == nil {
			return out, err
		}
		if next.Parent() != r {
			return nil, ir.Errorf(b.Terminator().Loc(), "branch to a block outside the region")
		}
		b, args = next, out
	}
}

func (f *Frame) bindBlockArgs(b *ir.Block, args []Value) error {
	if len(args) != b.NumArguments() {
		loc := ir.Location(ir.UnknownLoc{})
		if op := b.ParentOp(); op != nil {
			loc = op.Loc()
		}
		return ir.Errorf(loc, "block takes %d arguments, got %d", b.NumArguments(), len(args))
	}
	for i, a := range args {
		f.values[b.Argument(i)] = a
	}
	return nil
}

// runBlock executes b's ops. It returns the successor to run next with its
// arguments, or a nil successor and the values leaving the region.
func (f *Frame) runBlock(b *ir.Block) (next *ir.Block, out []Value, err error) {
	for op := b.First(); op != nil; op = op.Next() {
		f.branch, f.branchArgs = nil, nil
		results, err := f.exec(op)
		if err != nil {
			return nil, nil, err
		}
		if f.branch != nil {
			return f.branch, f.branchArgs, nil
		}
		if isTerminator(op) {
			return nil, results, nil
		}
		for i, r := range op.Results() {
			f.values[r] = results[i]
		}
	}
	return nil, nil, nil
}

// isTerminator reports whether op ends its block's execution: it has the
// Terminator trait, or it is unregistered (its traits are unknown) and is the
// last op of its block with no results.
func isTerminator(op *ir.Operation) bool {
	return op.HasTrait(ir.Terminator) || !op.Registered() && op.Next() == nil && op.NumResults() == 0
}

// count counts op against the limit of WithMaxOps, if one is set: every
// op run, by exec or a loop body's fast path, goes through it.
func (f *Frame) count(op *ir.Operation) error {
	if f.in.maxOps > 0 && f.in.ops.Add(1) > f.in.maxOps {
		return ir.Errorf(op.Loc(), "'%s' op: the run went past its limit of %d ops", op.Name(), f.in.maxOps)
	}
	return nil
}

// exec runs one op's rule.
func (f *Frame) exec(op *ir.Operation) ([]Value, error) {
	rule := f.in.rules[op.Name()]
	if rule == nil {
		return nil, ir.Errorf(op.Loc(), "no interpreter rule for '%s'", op.Name())
	}
	if err := f.count(op); err != nil {
		return nil, err
	}
	args := make([]Value, op.NumOperands())
	for i, v := range op.Operands() {
		if args[i] = f.values[v]; args[i] == nil {
			return nil, ir.Errorf(op.Loc(), "'%s' op operand %d is used before it is computed", op.Name(), i)
		}
	}
	if err := reserveResults(op); err != nil {
		return nil, ir.Errorf(op.Loc(), "'%s' op %v", op.Name(), err)
	}
	results, err := rule(f, op, args)
	if err != nil {
		var d *ir.Diagnostic
		if errors.As(err, &d) {
			return nil, err
		}
		return nil, ir.Errorf(op.Loc(), "'%s' op %v", op.Name(), err)
	}
	if !isTerminator(op) && len(results) != op.NumResults() {
		return nil, ir.Errorf(op.Loc(), "'%s' op: interpreter rule produced %d values for %d results", op.Name(), len(results), op.NumResults())
	}
	return results, nil
}
