package loop

// The op names of the loop dialect, one per row of its op table: code
// outside the dialect names an op by its constant, never by a string
// literal, so that a misspelt or removed op fails to compile. A test
// (dialects.TestOpNameConstants) checks that the constants and the rows agree.
const (
	// OpAlloc is loop.alloc: Allocates a buffer.
	OpAlloc = "loop.alloc"
	// OpDealloc is loop.dealloc: Frees a buffer.
	OpDealloc = "loop.dealloc"
	// OpLoad is loop.load: Reads one element of a buffer.
	OpLoad = "loop.load"
	// OpStore is loop.store: Writes one element of a buffer.
	OpStore = "loop.store"
	// OpDim is loop.dim: Size of one dimension of a buffer.
	OpDim = "loop.dim"
	// OpView is loop.view: Views a buffer with another shape.
	OpView = "loop.view"
	// OpFor is loop.for: Sequential loop with loop-carried values.
	OpFor = "loop.for"
	// OpParallel is loop.parallel: Multi-dimensional parallel loop nest, with reductions.
	OpParallel = "loop.parallel"
	// OpReduce is loop.reduce: Terminator of loop.parallel: the values to reduce.
	OpReduce = "loop.reduce"
	// OpIf is loop.if: Conditional with results.
	OpIf = "loop.if"
	// OpYield is loop.yield: Terminator of loop.for, loop.if and loop.reduce's combiners.
	OpYield = "loop.yield"
	// OpCollective is loop.collective: A collective among ranks, a host step of the launch plan.
	OpCollective = "loop.collective"
)
