package interp

import (
	"errors"
	"fmt"

	"github.com/strata-ir/strata/dialects/builtin"
	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
)

// The func and builtin dialects: calls, returns, and the cast that partial
// conversions leave behind (which has no meaning to run).
func init() {
	registerAll(map[string]Rule{
		funcs.OpReturn: func(_ *Frame, _ *ir.Operation, args []Value) ([]Value, error) {
			return args, nil
		},
		funcs.OpCall: callRule,
		builtin.OpUnrealizedConversionCast: func(_ *Frame, op *ir.Operation, _ []Value) ([]Value, error) {
			return nil, ir.Errorf(op.Loc(), "'%s' op has no run-time meaning: a conversion left it behind", op.Name())
		},
	})
}

// callRule runs func.call: it looks the callee up from the call site and
// runs it one level deeper.
func callRule(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	ref, ok := op.Attr("callee").(ir.SymbolRefAttr)
	if !ok {
		return nil, errors.New("has no callee symbol")
	}
	callee := ir.LookupSymbol(op, ref)
	if callee == nil && len(ref.Nested) == 0 {
		// Without a registered builtin dialect the module is not known to be
		// a symbol table; look in the interpreter's module.
		callee = f.in.Func(ref.Root)
	}
	if callee == nil {
		return nil, fmt.Errorf("calls %s, which is not defined", ref)
	}
	return f.Call(op, callee, args)
}
