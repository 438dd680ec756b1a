package funcs

// The op names of the func dialect, one per row of its op table: code
// outside the dialect names an op by its constant, never by a string
// literal, so that a misspelt or removed op fails to compile. A test
// (dialects.TestOpNameConstants) checks that the constants and the rows agree.
const (
	// OpFunc is func.func: An operation with a name containing a single SSACFG region.
	OpFunc = "func.func"
	// OpReturn is func.return: Function return operation.
	OpReturn = "func.return"
	// OpCall is func.call: Call operation.
	OpCall = "func.call"
	// OpCallIndirect is func.call_indirect: Indirect call operation.
	OpCallIndirect = "func.call_indirect"
	// OpConstant is func.constant: Constant.
	OpConstant = "func.constant"
)
