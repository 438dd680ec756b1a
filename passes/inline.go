package passes

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
)

func init() {
	Register(&PassInfo{
		Name:    "inline",
		Summary: "Inline function calls",
		Description: "Runs on a symbol table (a module) and replaces each direct call of a function " +
			"whose body is one block ending in a return by a copy of that body, repeatedly, up to " +
			"max-iterations rounds. Functions that take part in a recursive cycle are not inlined, " +
			"nor are declarations and multi-block bodies. Private functions left unreferenced after " +
			"being inlined are erased, and default-pipeline runs on every function that received " +
			"inlined code, as upstream MLIR's inliner does. Inlining stops where it would grow the " +
			"symbol table past 16 times its ops (and past 2^16 ops): the calls beyond stay calls " +
			"(num-calls-over-budget counts them), so a call tree that doubles at every level costs " +
			"time and memory in proportion to the module, not to 2^depth.",
		Anchor: AnyOp,
		Options: []OptionDef{
			{Name: "default-pipeline", Type: String, Default: "canonicalize",
				Doc: "The pipeline run on functions that received inlined code (empty for none)"},
			{Name: "max-iterations", Type: Int, Default: 4, Doc: "Maximum number of inlining rounds"},
		},
		New: newInline,
	})
}

// callOps names, for each direct-call op, the attribute holding its callee.
var callOps = map[string]string{
	funcs.OpCall: "callee",
}

type inline struct {
	maxIter  int
	pipeline *PassManager // nil when default-pipeline is empty
}

func newInline(opts Options) (Pass, error) {
	p := &inline{maxIter: int(opts.Int("max-iterations"))}
	if p.maxIter < 1 {
		return nil, fmt.Errorf("max-iterations must be at least 1")
	}
	if text := opts.String("default-pipeline"); text != "" {
		opm := NewOpPassManager(AnyOp)
		if err := opm.AddPipeline(text); err != nil {
			return nil, fmt.Errorf("default-pipeline: %w", err)
		}
		p.pipeline = &PassManager{OpPassManager: opm, DisableThreading: true}
	}
	return p, nil
}

func (*inline) Name() string { return "inline" }

func (p *inline) Run(table *ir.Operation, st *State) error {
	if !table.HasTrait(ir.SymbolTable) {
		return ir.Errorf(table.Loc(), "'%s' op was scheduled to run under inline, but does not define a symbol table", table.Name())
	}
	inlined := map[*ir.Operation]bool{} // callees inlined at least once
	receivers := []*ir.Operation{}      // callers that received code, in order
	received := map[*ir.Operation]bool{}
	count, left := 0, 0
	size := numOps(table)
	budget := max(inlineMinBudget, inlineGrowth*size)
	// The callees' sizes, counted once and kept up to date as code is
	// inlined into them: counting a callee at each of its calls made a
	// call tree that doubles at every level cost calls × callee size.
	sizes := map[*ir.Operation]int{}
	opsOf := func(fn *ir.Operation) int {
		n, ok := sizes[fn]
		if !ok {
			n = numOps(fn)
			sizes[fn] = n
		}
		return n
	}
	for range p.maxIter {
		recursive := recursiveCallables(table)
		var calls []*ir.Operation
		table.Walk(func(o *ir.Operation) bool {
			if _, ok := callOps[o.Name()]; ok {
				calls = append(calls, o)
			}
			return true
		})
		progress := false
		for _, call := range calls {
			callee := calleeOf(call)
			if callee == nil || recursive[callee] || call.IsAncestor(callee) || !inlinable(callee, call) {
				continue
			}
			grow := opsOf(callee) - 2 // less the function and its return
			if size+grow > budget {
				left++
				continue
			}
			size += grow
			caller := enclosingCallable(call, table)
			if _, counted := sizes[caller]; counted {
				sizes[caller] += grow - 1 // the call is gone
			}
			inlineCall(call, callee)
			inlined[callee] = true
			if caller != nil && !received[caller] {
				received[caller] = true
				receivers = append(receivers, caller)
			}
			count++
			progress = true
		}
		if !progress {
			break
		}
	}
	st.Stat("num-inlined-calls", "Number of inlined calls").Add(int64(count))
	st.Stat("num-calls-over-budget", "Number of calls left because inlining them would grow the module too much").Add(int64(left))
	erased := 0
	// One walk counts the references to each symbol and notes which
	// function holds them (asking for each function's uses walked the whole
	// table once per function); erasing a function drops its references,
	// which may leave the next ones unreferenced in turn.
	uses := map[*ir.Operation]int{}
	refsIn := map[*ir.Operation][]*ir.Operation{}
	if len(inlined) > 0 {
		for _, u := range ir.SymbolUses(table) {
			if target := ir.LookupSymbol(u.User, u.Ref); target != nil {
				uses[target]++
				holder := enclosingCallable(u.User, table)
				refsIn[holder] = append(refsIn[holder], target)
			}
		}
	}
	for _, c := range tableChildren(table) {
		if inlined[c] && ir.IsPrivate(c) && uses[c] == 0 {
			for _, target := range refsIn[c] {
				uses[target]--
			}
			c.Erase()
			erased++
		}
	}
	st.Stat("num-dead-callables", "Number of private functions erased after inlining").Add(int64(erased))
	if count == 0 {
		st.MarkUnchanged()
		return nil
	}
	if p.pipeline != nil {
		for _, fn := range receivers {
			if fn.ParentOp() == nil && fn != table {
				continue // erased
			}
			if err := p.pipeline.Run(st.Ctx, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// The inliner's size budget: a symbol table may grow to inlineGrowth times
// its ops, or to inlineMinBudget ops if that is more (a variable for tests).
const inlineGrowth = 16

var inlineMinBudget = 1 << 16

// numOps counts op and the ops nested in it.
func numOps(op *ir.Operation) int {
	n := 0
	op.Walk(func(*ir.Operation) bool { n++; return true })
	return n
}

// calleeOf returns the op a direct call refers to, or nil.
func calleeOf(call *ir.Operation) *ir.Operation {
	ref, ok := call.Attr(callOps[call.Name()]).(ir.SymbolRefAttr)
	if !ok {
		return nil
	}
	return ir.LookupSymbol(call, ref)
}

// inlinable reports whether callee's body can replace call: one block
// ending in a return-like terminator matching the call's arity and types.
func inlinable(callee, call *ir.Operation) bool {
	if callee.NumRegions() != 1 {
		return false
	}
	blocks := callee.Region(0).Blocks()
	if len(blocks) != 1 {
		return false
	}
	body := blocks[0]
	term := body.Terminator()
	if term == nil || !term.HasTrait(ir.ReturnLike) || term.NumOperands() != call.NumResults() || body.NumArguments() != call.NumOperands() {
		return false
	}
	for i, a := range body.Arguments() {
		if a.Type() != call.Operand(i).Type() {
			return false
		}
	}
	for i, v := range term.Operands() {
		if v.Type() != call.Result(i).Type() {
			return false
		}
	}
	return true
}

// inlineCall replaces call by a copy of callee's single-block body.
func inlineCall(call, callee *ir.Operation) {
	body := callee.Region(0).Front()
	m := map[*ir.Value]*ir.Value{}
	for i, a := range body.Arguments() {
		m[a] = call.Operand(i)
	}
	term := body.Terminator()
	for o := body.First(); o != term; o = o.Next() {
		call.Block().InsertBefore(o.Clone(m), call)
	}
	for i, res := range call.Results() {
		v := term.Operand(i)
		if n, ok := m[v]; ok {
			v = n
		}
		res.ReplaceAllUsesWith(v)
	}
	call.Erase()
}

// enclosingCallable returns the child of table that holds op.
func enclosingCallable(op, table *ir.Operation) *ir.Operation {
	for op != nil && op.ParentOp() != table {
		op = op.ParentOp()
	}
	return op
}

// recursiveCallables returns the children of table that can reach
// themselves through direct calls.
func recursiveCallables(table *ir.Operation) map[*ir.Operation]bool {
	edges := map[*ir.Operation][]*ir.Operation{}
	for _, fn := range tableChildren(table) {
		fn.Walk(func(o *ir.Operation) bool {
			if _, ok := callOps[o.Name()]; ok {
				if c := calleeOf(o); c != nil {
					edges[fn] = append(edges[fn], enclosingCallable(c, table))
				}
			}
			return true
		})
	}
	rec := map[*ir.Operation]bool{}
	for fn := range edges {
		seen := map[*ir.Operation]bool{}
		stack := append([]*ir.Operation(nil), edges[fn]...)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n == fn {
				rec[fn] = true
				break
			}
			if !seen[n] {
				seen[n] = true
				stack = append(stack, edges[n]...)
			}
		}
	}
	return rec
}
