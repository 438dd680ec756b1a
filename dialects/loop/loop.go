// Package loop defines the loop dialect: explicit buffers (memrefs with the
// identity, row-major layout) and the loops that read and write them. It is
// the level between the graph dialect's tensors and the gpu level; its
// contract (op names, operands, properties) is docs/lowering.md.
//
// Buffers are created by loop.alloc, released by loop.dealloc, and accessed
// element by element with loop.load and loop.store; loop.dim reads a size.
// Control flow is structured: loop.for (sequential, with loop-carried
// values), loop.parallel (a multi-dimensional parallel nest whose
// loop.reduce terminator combines per-iteration values), and loop.if. Index
// math uses arith on index; scalar computation uses arith and math.
//
// The builders in build.go (Alloc, Load, Store, Dim, For, Parallel, If...)
// are the API lowering passes write against.
package loop

import "github.com/strata-ir/strata/ir"

// Op names.
const (
	AllocOp    = OpAlloc
	DeallocOp  = OpDealloc
	LoadOp     = OpLoad
	StoreOp    = OpStore
	DimOp      = OpDim
	ForOp      = OpFor
	ParallelOp = OpParallel
	ReduceOp   = OpReduce
	IfOp       = OpIf
	YieldOp    = OpYield
)

// Property names.
const (
	// AlignmentAttr is loop.alloc's optional alignment in bytes (i64).
	AlignmentAttr = "alignment"
	// IndexAttr is loop.dim's dimension number (i64).
	IndexAttr = "index"
	// SegmentsAttr is loop.parallel's operand segment sizes,
	// array<i32: N, N, N, K> for N lower bounds, upper bounds and steps and
	// K reduction inits.
	SegmentsAttr = "operandSegmentSizes"
)

// NoUnrollAttr is a discardable unit attribute of loop.for: code
// generation asks the target's compiler not to unroll the loop (PTX's
// `.pragma "nounroll"`, LLVM's llvm.loop.unroll.disable). Unrolling never
// changes results; the attribute trades a loop's speed for the size of
// the code the driver's JIT compiles.
const NoUnrollAttr = "loop.no_unroll"

// EvictLastAttr is a discardable unit attribute of loop.load from global
// memory: code generation loads with an evict-last cache policy (PTX's
// ld.global.L1::evict_last.L2::cache_hint with an L2::evict_last
// createpolicy) where it loads a vector of 32-bit elements, and plainly
// otherwise. A cache hint never changes results; convert-loop-to-gpu puts
// it on the loads of row kernels (option row-evict-last).
const EvictLastAttr = "loop.evict_last"

// UpdatesArgsAttr is an attribute of a host function (array<i64>): the
// indices of the memref arguments the function writes in place (a KV
// cache's new entries, by loop-update-in-place), each returned as a
// result. An executor must give the function memory it may write for
// those arguments: the caller's buffer only when the caller gives it up
// (donates it), a copy otherwise. Functions without the attribute never
// write their arguments.
const UpdatesArgsAttr = "loop.updates_args"

// NestKindAttr is a discardable string attribute of a top-level
// loop.parallel: what the nest is, as convert-graph-to-loop made it from a
// graph.fusion of that kind ("pointwise", "reduction", "persistent_row",
// "matmul", "conv2d", "copy"). Passes after it (convert-loop-to-gpu) read
// it with NestKind instead of re-recognizing the nest from its shape; a
// nest without it (written by hand, or by another producer) is recognized
// by shape as before.
const NestKindAttr = "loop.nest"

// NestKind returns the kind NestKindAttr records on nest, or "" when it
// has none.
func NestKind(nest *ir.Operation) string {
	s, _ := nest.Attr(NestKindAttr).(ir.StringAttr)
	return s.Value
}

// Dialect is the loop dialect, ready to load into an ir.Context.
var Dialect = &ir.Dialect{
	Name:    "loop",
	Summary: "Buffers (memrefs) and structured loops over them.",
	Description: "The loop dialect holds explicit buffers (`memref` values with the " +
		"identity row-major layout), element loads and stores, and structured control " +
		"flow: sequential `loop.for` with loop-carried values, multi-dimensional " +
		"`loop.parallel` with `loop.reduce` for reductions, and `loop.if`. Index math " +
		"uses `arith` on `index`. A fused graph group becomes one top-level " +
		"`loop.parallel` nest, the unit that later becomes one GPU kernel " +
		"(docs/lowering.md).",
	Ops: []*ir.OpDef{allocDef, deallocDef, loadDef, storeDef, dimDef, viewDef, forDef, parallelDef, reduceDef, ifDef, yieldDef, collectiveDef},
}

var allocDef = &ir.OpDef{
	Name:    AllocOp,
	Summary: "Allocates a buffer",
	Description: "Allocates a buffer of the result's memref type. Each dynamic (`?`) " +
		"dimension of the type takes its size from one `index` operand, in order. The " +
		"interpreter fills new buffers with zeros; compiled code leaves them " +
		"uninitialized, so programs must not read an element before storing it.",
	Inherent: []string{AlignmentAttr},
	Operands: []ir.ArgDoc{{Name: "dynamicSizes", Doc: "one `index` per dynamic dimension of the result"}},
	Results:  []ir.ArgDoc{{Name: "memref", Doc: "the new buffer, of a ranked memref type"}},
	Attrs:    []ir.ArgDoc{{Name: AlignmentAttr, Doc: "optional alignment of the buffer in bytes (i64, a power of two)"}},
	Example:  "%m = \"loop.alloc\"(%n) <{alignment = 64 : i64}> : (index) -> memref<4x?xf32>",
	Verify:   verifyAlloc,
	Parse:    parseAlloc,
	Print:    printAlloc,
}

var deallocDef = &ir.OpDef{
	Name:        DeallocOp,
	Summary:     "Frees a buffer",
	Description: "Releases a buffer made by `loop.alloc`. Any later use of it is an error.",
	Operands:    []ir.ArgDoc{{Name: "memref", Doc: "the buffer to free"}},
	Example:     "\"loop.dealloc\"(%m) : (memref<4x?xf32>) -> ()",
	Verify:      verifyDealloc,
	Parse:       parseDealloc,
	Print:       printDealloc,
}

var loadDef = &ir.OpDef{
	Name:    LoadOp,
	Summary: "Reads one element of a buffer",
	Description: "Reads the element of the buffer at the given indices, one `index` per " +
		"dimension. An index out of bounds is undefined behaviour in compiled code and " +
		"an error in the interpreter. Loads read memory, so they are not Pure: CSE must " +
		"not merge two loads separated by a store.",
	Operands: []ir.ArgDoc{
		{Name: "memref", Doc: "the buffer"},
		{Name: "indices", Doc: "one `index` per dimension of the buffer"},
	},
	Results: []ir.ArgDoc{{Name: "result", Doc: "the element, of the buffer's element type"}},
	Example: "%v = \"loop.load\"(%m, %i, %j) : (memref<4x?xf32>, index, index) -> f32",
	Verify:  verifyLoad,
	Parse:   parseLoad,
	Print:   printLoad,
}

var storeDef = &ir.OpDef{
	Name:    StoreOp,
	Summary: "Writes one element of a buffer",
	Description: "Writes the value into the buffer at the given indices, one `index` per " +
		"dimension. The value's type is the buffer's element type.",
	Operands: []ir.ArgDoc{
		{Name: "value", Doc: "the element to write"},
		{Name: "memref", Doc: "the buffer"},
		{Name: "indices", Doc: "one `index` per dimension of the buffer"},
	},
	Example: "\"loop.store\"(%v, %m, %i, %j) : (f32, memref<4x?xf32>, index, index) -> ()",
	Verify:  verifyStore,
	Parse:   parseStore,
	Print:   printStore,
}

var dimDef = &ir.OpDef{
	Name:    DimOp,
	Summary: "Size of one dimension of a buffer",
	Description: "Returns the size of dimension `index` of the buffer: the static size " +
		"or, for a dynamic dimension, the size it was allocated with.",
	Traits:   ir.Pure,
	Inherent: []string{IndexAttr},
	Operands: []ir.ArgDoc{{Name: "memref", Doc: "the buffer"}},
	Results:  []ir.ArgDoc{{Name: "result", Doc: "the size, an `index`"}},
	Attrs:    []ir.ArgDoc{{Name: IndexAttr, Doc: "the dimension, an i64 in [0, rank)"}},
	Example:  "%n = \"loop.dim\"(%m) <{index = 1 : i64}> : (memref<4x?xf32>) -> index",
	Verify:   verifyDim,
	Parse:    parseDim,
	Print:    printDim,
}

var forDef = &ir.OpDef{
	Name:    ForOp,
	Summary: "Sequential loop with loop-carried values",
	Description: "Runs its body for `iv = lb, lb+step, ...` while `iv < ub` (no " +
		"iteration when `lb >= ub`; `step` must be positive). The body is one block " +
		"with arguments `(%iv: index, %iter...)`: the iter arguments start as the " +
		"inits and take the values the body's `loop.yield` passes on. The results are " +
		"the iter values after the last iteration (the inits when there is none). " +
		"The discardable unit attribute `loop.no_unroll` asks code generation not to unroll it.",
	Traits: ir.RecursiveEffects | ir.SingleBlock,
	Operands: []ir.ArgDoc{
		{Name: "lowerBound", Doc: "`index`"},
		{Name: "upperBound", Doc: "`index`, exclusive"},
		{Name: "step", Doc: "`index`, positive"},
		{Name: "initArgs", Doc: "initial values of the loop-carried values"},
	},
	Results: []ir.ArgDoc{{Name: "results", Doc: "final loop-carried values, typed as the inits"}},
	Example: "%sum = \"loop.for\"(%c0, %n, %c1, %zero) ({\n" +
		"^bb0(%i: index, %acc: f32):\n" +
		"  %x = \"loop.load\"(%m, %i) : (memref<?xf32>, index) -> f32\n" +
		"  %s = arith.addf %acc, %x : f32\n" +
		"  \"loop.yield\"(%s) : (f32) -> ()\n" +
		"}) : (index, index, index, f32) -> f32",
	Verify: verifyFor,
}

var parallelDef = &ir.OpDef{
	Name:    ParallelOp,
	Summary: "Multi-dimensional parallel loop nest, with reductions",
	Description: "Runs its body once for every point of an N-dimensional iteration " +
		"space (`lbs[d] <= iv[d] < ubs[d]` by `steps[d]`), in no specified order. The " +
		"body is one block whose arguments are the N induction variables (`index`); it " +
		"ends with `loop.reduce`, which passes K per-iteration values. Each of the K " +
		"results starts as its init and is combined with every iteration's value by " +
		"the matching combiner region of `loop.reduce`, which must be associative and " +
		"commutative. `operandSegmentSizes = array<i32: N, N, N, K>` splits the " +
		"operands. A fused graph group becomes one top-level `loop.parallel` nest, " +
		"which later becomes one GPU kernel.",
	Traits:   ir.RecursiveEffects | ir.SingleBlock,
	Inherent: []string{SegmentsAttr},
	Operands: []ir.ArgDoc{
		{Name: "lowerBound", Doc: "N `index` values"},
		{Name: "upperBound", Doc: "N `index` values, exclusive"},
		{Name: "step", Doc: "N positive `index` values"},
		{Name: "initVals", Doc: "K initial values of the reductions"},
	},
	Results: []ir.ArgDoc{{Name: "results", Doc: "the K reduced values, typed as the inits"}},
	Attrs:   []ir.ArgDoc{{Name: SegmentsAttr, Doc: "`array<i32: N, N, N, K>`"}},
	Example: "%sum = \"loop.parallel\"(%c0, %n, %c1, %zero) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({\n" +
		"^bb0(%i: index):\n" +
		"  %x = \"loop.load\"(%m, %i) : (memref<?xf32>, index) -> f32\n" +
		"  \"loop.reduce\"(%x) ({\n" +
		"  ^bb0(%lhs: f32, %rhs: f32):\n" +
		"    %s = arith.addf %lhs, %rhs : f32\n" +
		"    \"loop.yield\"(%s) : (f32) -> ()\n" +
		"  }) : (f32) -> ()\n" +
		"}) : (index, index, index, f32) -> f32",
	Verify: verifyParallel,
}

var reduceDef = &ir.OpDef{
	Name:    ReduceOp,
	Summary: "Terminator of loop.parallel: the values to reduce",
	Description: "Ends the body of `loop.parallel`, passing one value per reduction " +
		"(K in all). It has K regions, one per value: a combiner " +
		"`^bb0(%lhs: T, %rhs: T)` that ends with `loop.yield` of the combined value " +
		"of type T. With K = 0 it has no operands and no regions.",
	Traits:   ir.Terminator | ir.RecursiveEffects | ir.SingleBlock,
	Operands: []ir.ArgDoc{{Name: "operands", Doc: "the K values of this iteration"}},
	Example: "\"loop.reduce\"(%x) ({\n" +
		"^bb0(%lhs: f32, %rhs: f32):\n" +
		"  %m = arith.maximumf %lhs, %rhs : f32\n" +
		"  \"loop.yield\"(%m) : (f32) -> ()\n" +
		"}) : (f32) -> ()",
	Verify: verifyReduce,
}

var ifDef = &ir.OpDef{
	Name:    IfOp,
	Summary: "Conditional with results",
	Description: "Runs the then region if the `i1` condition is true, the else region " +
		"otherwise; the results are the values the region run passes to its " +
		"`loop.yield`. The else region may be empty only when there are no results.",
	Traits:   ir.RecursiveEffects | ir.SingleBlock,
	Operands: []ir.ArgDoc{{Name: "condition", Doc: "`i1`"}},
	Results:  []ir.ArgDoc{{Name: "results", Doc: "the values yielded by the region run"}},
	Example: "%r = \"loop.if\"(%c) ({\n" +
		"  \"loop.yield\"(%a) : (f32) -> ()\n" +
		"}, {\n" +
		"  \"loop.yield\"(%b) : (f32) -> ()\n" +
		"}) : (i1) -> f32",
	Verify: verifyIf,
}

var yieldDef = &ir.OpDef{
	Name:    YieldOp,
	Summary: "Terminator of loop.for, loop.if and loop.reduce's combiners",
	Description: "Passes its operands to the parent op: the next loop-carried values " +
		"of `loop.for`, the results of `loop.if`, or the combined value of a " +
		"`loop.reduce` combiner. The parent op checks their number and types.",
	Traits:   ir.Pure | ir.Terminator | ir.ReturnLike,
	Operands: []ir.ArgDoc{{Name: "results", Doc: "the values passed to the parent"}},
	Example:  "\"loop.yield\"(%a, %b) : (f32, index) -> ()",
	Verify:   verifyYield,
	Parse:    ir.ParseReturnLike,
	Print:    ir.PrintReturnLike,
}
