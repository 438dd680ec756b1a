package togpu

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/lower" // lower-to-gpu starts with lower-to-loop
)

// PassName is the pass's pipeline name.
const PassName = "convert-loop-to-gpu"

// LaunchAttr is the attribute on each generated gpu.func recording its
// launch parameters: a dictionary {block, vector, rows_per_block, mapping}.
const LaunchAttr = "strata.launch"

// The mappings recorded in LaunchAttr.
const (
	MappingPointwise = "pointwise"
	MappingRow       = "row"
)

// Config holds the launch parameters of the generated kernels.
type Config struct {
	// Block is the number of threads per block of pointwise kernels and of
	// row kernels with one row per block: a multiple of 32, at most 1024.
	Block int64
	// Vector is the number of consecutive points a pointwise thread handles
	// per step when the nest allows it (1 disables), counted for 4-byte
	// elements: a nest that moves only 16-bit elements takes twice as many
	// (loads of small broadcast operands aside: widestAccess). Row loops
	// take the same steps, a 16-bit row nest twice the count where every
	// row loop divides into such steps.
	Vector int64
	// RowsPerBlock is the number of rows a row kernel's block handles, a
	// warp per row when above 1 (the block then has 32*RowsPerBlock
	// threads); 0 picks it per nest: one warp per row for rows of a static
	// length up to ShortRow, one block per row otherwise.
	RowsPerBlock int64
	// MaxBlocks caps the grid of pointwise kernels; threads then loop.
	MaxBlocks int64
	// TensorCores maps bf16 matmul nests to tiled mma.sync kernels (the
	// mma mapping); without it they run on the SIMT pointwise mapping.
	TensorCores bool
	// MMATile is the tiling of the mma mapping's kernels, one of MMATiles;
	// the zero value is the default, MMATiles[0].
	MMATile MMATile
	// CuBLASLt runs bf16 and f16 matmul nests as gpu.library_matmul ops
	// (cuBLASLt) followed by their epilogue as a separate kernel: the
	// option matmul=cublaslt (library_gemm.go).
	CuBLASLt bool
	// CuDNN runs bf16 and f16 convolution nests as gpu.library_conv2d ops
	// (cuDNN) followed by their epilogue as a pointwise kernel: the option
	// conv=cudnn (library_conv.go).
	CuDNN bool
	// RowWelford merges a row's mean and variance reductions into one
	// (Chan's parallel variance, rows_stats.go) where the row is held in
	// registers: one trip across the row's threads instead of two.
	RowWelford bool
	// RowReread makes the write loop of a register-held row (the row loop
	// that stores) load its operands again instead of reusing the values
	// the row's reduction loops loaded: the row's values then die after the
	// thread's own partial sums, before the reductions across the row, and
	// the second read comes from the caches (the structure of Inductor's
	// looped layer norm; bench/NOTES.md, session 4).
	RowReread bool
	// RowShuffleMerge combines the warps' partials of a row reduction with
	// a shuffle butterfly (each lane reads one warp's partial; log2 of the
	// warps steps) instead of every thread combining all of them in warp
	// order, where the warps are a power of two: fewer instructions and
	// registers (softmax over 8192 columns at 512 threads: 40 → 32), and
	// what lets 512-thread rows run as fast as 256 (bench/NOTES.md,
	// session 4).
	RowShuffleMerge bool
	// RowEvictLast marks the global loads of row kernels whose rows have a
	// write loop (softmax, layer norm; not row reductions, which store a
	// value a row) loop.evict_last: the backends load them with an
	// evict-last L1 and L2 cache policy, as Triton's kernels for PyTorch
	// load rows. Measured on the H200 (bench/NOTES.md, session 4), with the
	// L2 holding dirty lines at the kernel's start: layer norm and softmax
	// 3.6–4.1% faster, row sums 0.6% slower (so unmarked).
	RowEvictLast bool
	// IndexBits is the width of the index arithmetic of pointwise and row
	// kernels: 32 computes positions, N-D coordinates and offsets in i32
	// where a range analysis proves every value fits (index32.go), 64 (or
	// 0, the zero value) keeps index. 32 is the default: exact by
	// construction, and measured on the H200 in the bench's conditions
	// (bench/NOTES.md, session 4, lead) layer norm's row kernel takes
	// 0.129 ms with it and 0.139 with 64-bit offsets, at every block size.
	IndexBits int64
	// UnrollInner leaves the sequential loops inside pointwise kernels (a
	// SIMT matmul's or a convolution's reduction) to the target compiler's
	// unrolling. Without it those of ≥ NoUnrollMinTrips static trips run
	// NoUnrollFactor trips an iteration of a loop.no_unroll loop: the
	// driver's JIT unrolls them fully otherwise, which made most of the
	// examples' first-call load (bench/NOTES.md, H4).
	UnrollInner bool
}

// NoUnrollMinTrips is the fewest static trips of an inner loop that
// UnrollInner = false marks: shorter loops unroll into little code.
const NoUnrollMinTrips = 8

// ShortRow is the longest static row that RowsPerBlock = 0 maps to a warp.
const ShortRow = 512

// DefaultConfig is the configuration of the pass without options.
var DefaultConfig = Config{Block: 256, Vector: 4, RowsPerBlock: 0, MaxBlocks: 65536, TensorCores: true, MMATile: MMATiles[0], RowWelford: true, RowShuffleMerge: true, RowEvictLast: true, IndexBits: 32}

func (c Config) check() error {
	switch {
	case c.Block < 32 || c.Block > 1024 || c.Block%32 != 0:
		return fmt.Errorf("%s: block=%d must be a multiple of 32 in [32, 1024]", PassName, c.Block)
	case c.Vector < 1 || c.Vector > 16:
		return fmt.Errorf("%s: vector=%d must be in [1, 16]", PassName, c.Vector)
	case c.RowsPerBlock < 0 || 32*c.RowsPerBlock > 1024:
		return fmt.Errorf("%s: rows-per-block=%d must be in [0, 32]", PassName, c.RowsPerBlock)
	case c.MaxBlocks < 1:
		return fmt.Errorf("%s: max-blocks=%d must be positive", PassName, c.MaxBlocks)
	case c.IndexBits != 0 && c.IndexBits != 32 && c.IndexBits != 64:
		return fmt.Errorf("%s: index-bits=%d must be 32 or 64", PassName, c.IndexBits)
	}
	if err := c.mmaTile().check(); err != nil {
		return fmt.Errorf("%s: %w", PassName, err)
	}
	return nil
}

func init() {
	d := DefaultConfig
	passes.Register(&passes.PassInfo{
		Name:    PassName,
		Summary: "Turn each top-level loop.parallel nest into a gpu.func kernel and its launch",
		Description: "For every func.func of the module, each top-level `loop.parallel` nest (one per fused " +
			"graph group) becomes a kernel `gpu.func` in `gpu.module @<func>_kernels`, and the nest is " +
			"replaced by its launch: grid and block sizes computed with `arith` on the host from the " +
			"(possibly symbolic) bounds, N-D buffers passed as 1-D views (`loop.view`) together with " +
			"their dynamic sizes (`loop.dim`), and `gpu.launch_func`. Kernel bodies see only 1-D " +
			"memrefs: accesses are linearized row-major. Pointwise nests use a grid-stride loop " +
			"handling `vector` consecutive points per thread where the innermost extent allows; nests " +
			"whose inner loops reduce or sweep rows use a block (or, for short rows, a warp) per row, " +
			"reducing with `gpu.shuffle xor`, workgroup memory and `gpu.barrier`. Each kernel records " +
			"its parameters in `strata.launch`. A nest that cannot run as a kernel (reductions " +
			"returned to the host, allocation inside the nest, unsupported ops) is a located error.",
		Anchor: builtin.OpModule,
		Options: []passes.OptionDef{
			{Name: "block", Type: passes.Int, Default: d.Block, Doc: "threads per block (a multiple of 32, at most 1024)"},
			{Name: "vector", Type: passes.Int, Default: d.Vector, Doc: "points per thread step of pointwise kernels and row loops, in 4-byte lanes: twice as many for nests of 16-bit elements (for row nests where every row loop divides into such steps) (1 disables)"},
			{Name: "rows-per-block", Type: passes.Int, Default: d.RowsPerBlock,
				Doc: "rows per block of row kernels, a warp per row when above 1; 0 picks per nest"},
			{Name: "max-blocks", Type: passes.Int, Default: d.MaxBlocks, Doc: "largest grid of pointwise kernels (threads loop beyond it)"},
			{Name: "tensor-cores", Type: passes.Bool, Default: d.TensorCores, Doc: "run bf16 and f16 matmul nests (any sizes) as tiled mma.sync kernels"},
			{Name: "row-welford", Type: passes.Bool, Default: d.RowWelford,
				Doc: "merge a register-held row's mean and variance reductions into one (Chan's parallel variance)"},
			{Name: "row-reread", Type: passes.Bool, Default: d.RowReread,
				Doc: "the write loop of a register-held row loads its operands again (from the caches) instead of keeping the row in registers across its reductions"},
			{Name: "row-shuffle-merge", Type: passes.Bool, Default: d.RowShuffleMerge,
				Doc: "combine the warps' partials of a row reduction with a shuffle butterfly instead of a sequential combine in every thread (power-of-two warps)"},
			{Name: "row-evict-last", Type: passes.Bool, Default: d.RowEvictLast,
				Doc: "load the global operands of row kernels that write rows (softmax, layer norm) with an evict-last cache policy (loop.evict_last)"},
			{Name: "mma-tile", Type: passes.String, Default: d.MMATile.String(), Enum: mmaTileNames(),
				Doc: "tiling of the tensor-core matmul kernels: block tile MxNxK, s and the shared-memory stages; then w64 for mma.sync warp tiles 64 wide, g for Hopper's wgmma kernel (sm_90a), go for it with each product in flight across k tiles, ws for its warp-specialized form (a producer warpgroup and mbarriers), wst for that with the producer's copies by TMA (one thread, tensor maps), then e for its epilogue stored through workgroup memory (16 bytes of a row a lane), then c2 for clusters of 2 blocks sharing B's tile by TMA multicast, then p and a block count for a persistent grid"},
			{Name: "matmul", Type: passes.String, Default: MatmulMMA, Enum: matmulOptions,
				Doc: "how bf16/f16 matmul nests run: Strata's kernels with the epilogue fused (mma), or gpu.library_matmul (cuBLASLt; a bias added before the rounding in its BIAS epilogue) and an epilogue kernel (cublaslt)"},
			{Name: "conv", Type: passes.String, Default: ConvMMA, Enum: convOptions,
				Doc: "how bf16/f16 convolution nests run: Strata's implicit-GEMM kernels with the epilogue fused (mma), or gpu.library_conv2d (cuDNN) and a pointwise epilogue kernel (cudnn)"},
			{Name: "index-bits", Type: passes.Int, Default: d.IndexBits,
				Doc: "width of the index arithmetic of pointwise and row kernels: 32 uses i32 where a range analysis proves every index fits (static shapes, or dynamic ones under a size guard the function gets), 64 keeps index"},
			{Name: "unroll-inner", Type: passes.Bool, Default: d.UnrollInner,
				Doc: "let the target compiler unroll the sequential loops inside pointwise kernels (SIMT matmul and convolution reductions); off runs those of 8 or more static trips 4 trips an iteration of a loop.no_unroll loop, for a smaller driver JIT, and shorter ones that load straight"},
		},
		After: []passes.Order{
			{Pass: "convert-graph-to-loop", Reason: "it turns the loop.parallel nests convert-graph-to-loop makes into kernels"},
		},
		New: func(o passes.Options) (passes.Pass, error) {
			tile, err := ParseMMATile(o.String("mma-tile"))
			if err != nil {
				return nil, err
			}
			c := Config{Block: o.Int("block"), Vector: o.Int("vector"), RowsPerBlock: o.Int("rows-per-block"), MaxBlocks: o.Int("max-blocks"), TensorCores: o.Bool("tensor-cores"), MMATile: tile,
				CuBLASLt: o.String("matmul") == MatmulCuBLASLt, CuDNN: o.String("conv") == ConvCuDNN, RowWelford: o.Bool("row-welford"), RowReread: o.Bool("row-reread"), RowShuffleMerge: o.Bool("row-shuffle-merge"), RowEvictLast: o.Bool("row-evict-last"), IndexBits: o.Int("index-bits"),
				UnrollInner: o.Bool("unroll-inner")}
			if err := c.check(); err != nil {
				return nil, err
			}
			return &pass{cfg: c}, nil
		},
	})
	passes.RegisterPipeline("lower-to-gpu",
		"The full default lowering: lower-to-loop, then convert-loop-to-gpu and cleanups",
		"lower-to-loop,"+BeforeConversion+","+PassName+","+AfterConversion)
}

// BeforeConversion is what lower-to-gpu runs between lower-to-loop and
// convert-loop-to-gpu: masked updates of arguments written in place (a
// decoding step's KV caches), which the GPU executor honours
// (loop.UpdatesArgsAttr). A pipeline that runs the conversion with its
// own options runs it first too.
const BeforeConversion = "func.func(" + lower.UpdateInPlacePassName + ")"

// AfterConversion is what lower-to-gpu runs after convert-loop-to-gpu:
// the f64 math expansion and the cleanups. A pipeline that runs the
// conversion with its own options (the autotuner's candidates) follows it
// with this, so that every candidate compiles what the default does.
//
// The cleanups run on each function, the host's and every kernel, rather
// than on the module: a kernel is isolated from above, so canonicalize and
// cse on the module change each kernel exactly as they do on the kernel
// alone, and the pass manager runs the kernels at once (the examples'
// transformer: 11 kernels a graph, and these passes were two thirds of
// its pass time).
const AfterConversion = DedupKernelsPassName + ",func.func(canonicalize,cse),gpu.module(gpu.func(expand-math,canonicalize,cse))," + DedupKernelsPassName

type pass struct{ cfg Config }

func (*pass) Name() string { return PassName }

// Run converts the nests of every function of the module.
func (p *pass) Run(module *ir.Operation, st *passes.State) error {
	n, err := p.run(st.Ctx, module)
	st.Stat("kernels", "kernels generated").Add(int64(n))
	return err
}

// Run converts the nests of every function of module with cfg; it is the
// pass without the pass manager.
func Run(ctx *ir.Context, module *ir.Operation, cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	_, err := (&pass{cfg: cfg}).run(ctx, module)
	return err
}

// run converts every function and returns the number of kernels made.
func (p *pass) run(ctx *ir.Context, module *ir.Operation) (int, error) {
	body := module.Region(0).Front()
	if body == nil {
		return 0, nil
	}
	// The calls graph-attention-to-flash made become kernel launches.
	if err := lowerFlashCalls(ctx, module); err != nil {
		return 0, err
	}
	var errs ir.DiagnosticList
	kernels := 0
	for _, fn := range body.Ops() {
		if fn.Name() != funcs.OpFunc || funcs.IsExternal(fn) {
			continue
		}
		n, err := p.convertFunc(ctx, module, fn)
		kernels += n
		if err != nil {
			errs = append(errs, asDiagnostics(fn, err)...)
		}
	}
	if len(errs) > 0 {
		return kernels, errs
	}
	return kernels, nil
}

func asDiagnostics(fn *ir.Operation, err error) ir.DiagnosticList {
	switch e := err.(type) {
	case *ir.Diagnostic:
		return ir.DiagnosticList{e}
	case ir.DiagnosticList:
		return e
	}
	return ir.DiagnosticList{ir.Errorf(fn.Loc(), "%s: %v", PassName, err)}
}

// topLevelNests returns the loop.parallel ops of fn not nested in another.
func topLevelNests(fn *ir.Operation) []*ir.Operation {
	var nests []*ir.Operation
	fn.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.ParallelOp {
			nests = append(nests, o)
			return false
		}
		return true
	})
	return nests
}

// convertFunc converts the nests of fn, returning how many kernels it made.
func (p *pass) convertFunc(ctx *ir.Context, module, fn *ir.Operation) (int, error) {
	if p.cfg.CuBLASLt {
		lowerLibraryMatmuls(ctx, fn)
	}
	if p.cfg.CuDNN {
		lowerLibraryConvs(ctx, fn)
	}
	splitScatterZeros(ctx, fn)
	nests := topLevelNests(fn)
	if len(nests) == 0 {
		return 0, nil
	}
	name := symName(fn)
	var errs ir.DiagnosticList
	for i, nest := range nests {
		if err := check(nest); err != nil {
			errs = append(errs, ir.Errorf(nest.Loc(), "%s: cannot map loop.parallel nest #%d of @%s: %v", PassName, i, name, err))
		}
	}
	if len(errs) > 0 {
		return 0, errs
	}
	nests = slices.DeleteFunc(nests, func(nest *ir.Operation) bool {
		if emptyNest(nest) {
			nest.Erase() // no work: no kernel and no launch
			return true
		}
		return false
	})
	if len(nests) == 0 {
		return 0, nil
	}
	gpu.MarkContainer(module)
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointAfter(fn)
	gmod := gpu.NewModule(b, fn.Loc(), uniqueSymbol(module, name+"_kernels"))
	// The plans change the nests (kernelGen.plan): one after another. The
	// kernels are then built at once, each reading the host function and
	// writing only its own detached gpu.func (a backward graph's 115
	// kernels took ≈ 45 % of its passes one by one, session 16), and
	// placed in order, with their launches, as one at a time would.
	gens := make([]*kernelGen, len(nests))
	failed := make([]error, len(nests))
	for i, nest := range nests {
		gens[i] = &kernelGen{
			ctx:  ctx,
			cfg:  p.cfg,
			nest: nest,
			name: fmt.Sprintf("%s_kernel_%d", name, i),
		}
		if failed[i] = gens[i].plan(); failed[i] != nil {
			break
		}
	}
	buildAll(gens, failed)
	for i, k := range gens {
		if failed[i] != nil {
			return i, failed[i]
		}
		if err := k.place(gmod); err != nil {
			return i, err
		}
	}
	return len(nests), nil
}

// buildAll builds the planned kernels of gens (kernelGen.build) on up to
// GOMAXPROCS goroutines, each error at its kernel's index in errs; it
// stops at the first kernel whose plan failed (errs already set). A
// panic in a build goes on in the caller's goroutine, as it would have
// without the goroutines.
func buildAll(gens []*kernelGen, errs []error) {
	n := len(gens)
	if i := slices.IndexFunc(errs, func(err error) bool { return err != nil }); i >= 0 {
		n = i
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			errs[i] = gens[i].build()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	panics := make([]any, workers)
	for w := range workers {
		wg.Go(func() {
			defer func() { panics[w] = recover() }()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				errs[i] = gens[i].build()
			}
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

// emptyNest reports whether a nest's iteration space is statically empty:
// a dimension with constant bounds whose upper bound is not above its lower
// one (an extent of 0, the loops of an empty tensor). Its body never runs.
func emptyNest(nest *ir.Operation) bool {
	lbs, ubs, _, _, _ := loop.ParallelBounds(nest)
	for d := range lbs {
		lb, ok1 := staticInt(lbs[d])
		ub, ok2 := staticInt(ubs[d])
		if ok1 && ok2 && ub <= lb {
			return true
		}
	}
	return false
}

func symName(op *ir.Operation) string {
	s, _ := op.Attr(ir.SymNameAttr).(ir.StringAttr)
	return s.Value
}

// uniqueSymbol returns name, or name with a numeric suffix, so that it is
// not yet a symbol of module.
func uniqueSymbol(module *ir.Operation, name string) string {
	cand := name
	for i := 1; ir.LookupSymbol(module, ir.SymbolRef(cand)) != nil; i++ {
		cand = fmt.Sprintf("%s_%d", name, i)
	}
	return cand
}
