package autotune

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes/layout"
	"github.com/strata-ir/strata/passes/lower"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/cudnn"
	"github.com/strata-ir/strata/runtime/exec"
)

// loadCuBLASLt finds cuBLASLt; a variable so that tests can take it away.
var loadCuBLASLt = cublaslt.Load

// loadCuDNN finds cuDNN; a variable so that tests can take it away.
var loadCuDNN = cudnn.Load

// cuBLASLtSearched and cuDNNSearched report whether the libraries'
// searches have ended; variables so that tests can fake them.
var (
	cuBLASLtSearched = cublaslt.Searched
	cuDNNSearched    = cudnn.Searched
)

// noCuDNN logs, once a process, that convolutions stay on Strata's
// kernels because cuDNN does not load.
var noCuDNN sync.Once

// withLibrary returns cands with, right after the default (so that the
// time budget does not skip it), the configuration that runs the matmul
// nests on cuBLASLt with their epilogue as a separate kernel, as
// Inductor weighs ATen's GEMM against its templates: only when the
// program has mma kernels and the library loads. A library that does not
// load is logged and skipped, never an error.
func withLibrary(name string, cands []togpu.Config, kernels []Kernel) []togpu.Config {
	if !slices.ContainsFunc(kernels, func(k Kernel) bool { return k.Mapping == togpu.MappingMMA }) {
		return cands
	}
	if err := loadCuBLASLt(); err != nil {
		logs.Printf(Topic, "%s: no cuBLASLt candidate: %v", name, err)
		return cands
	}
	c := togpu.DefaultConfig
	c.CuBLASLt = true
	return slices.Insert(slices.Clone(cands), 1, c)
}

// ModeConfig is the policy that decides where a program's matmuls run
// when it is compiled without a search: the convert-loop-to-gpu
// configuration for mode and module (the graph-level program about to be
// lowered). When module has bf16 or f16 matmuls (graph.matmul, or
// graph.attention, which decomposes into them) and cuBLASLt loads in this
// process, it is togpu.DefaultConfig with matmul=cublaslt: every bf16/f16
// matmul nest of static shape becomes a gpu.library_matmul and its
// epilogue a separate kernel, as Inductor's default mode runs GEMMs on
// cuBLAS (measured on the H200: 0.44 ms for mm_bias_gelu against 0.85 ms
// on Strata's mma.sync kernels, which mma.sync caps near 350 TFLOP/s
// while cuBLAS reaches 800). Nests the library plan rejects (dynamic
// shapes) stay on Strata's kernels in the same program, and without the
// library every nest does. A program without such matmuls gets the
// default configuration without loading the library (a dlopen of a
// library of hundreds of MB: 55–250 ms of a first call). A nil module
// counts as one with matmuls.
//
// A function with MatmulAttr = "mma" keeps its matmuls on Strata's
// kernels whatever loads.
//
// The mode does not change the answer today: default and reduce-overhead
// take it as it is, and max-autotune callers that search (Tune) time the
// library against Strata's tilings instead, while callers that do not
// search (the frontend) use this for every mode. The choice is logged
// under STRATA_LOGS=autotune.
//
// The pass defaults stay Strata's own kernels (lower-to-gpu produces
// mma.sync PTX for a bf16 matmul whatever the process can load): the
// library is a property of the process, so the policy lives here, with
// the runtime, not in the passes.
func ModeConfig(mode exec.Mode, module *ir.Operation) togpu.Config {
	return modeConfig(mode, module, loadCuBLASLt, loadCuDNN)
}

// StartLibraryLoads starts, on goroutines of their own, the loads of the
// libraries that ModeConfig(mode, module) would wait for, and reports
// whether it started any: false when module needs no library or their
// searches have ended. A caller can then lower module under
// AssumedConfig(mode, module, true) while they load, and check
// ModeConfig's answer after (a library that does not load changes it).
func StartLibraryLoads(module *ir.Operation) bool {
	convs := hasHalfConvs(module)
	blas := convs || hasHalfMatmuls(module) && !ownMatmuls(module)
	started := false
	// The loads happen once a process: ModeConfig's own calls wait for
	// them and read their errors.
	if convs && !cuDNNSearched() {
		go func(load func() error) { _ = load() }(loadCuDNN)
		started = true
	}
	if blas && !cuBLASLtSearched() {
		go func(load func() error) { _ = load() }(loadCuBLASLt)
		started = true
	}
	return started
}

// LoadLibraries starts loading cuBLASLt and cuDNN, each on a goroutine
// of its own, and returns at once: a backend calls it when it starts, so
// that the libraries a first compile may need load while the program
// prepares its first call. A library that does not load is reported by
// ModeConfig, as without it.
func LoadLibraries() {
	for _, load := range []func() error{loadCuBLASLt, loadCuDNN} {
		go func() { _ = load() }()
	}
}

// AssumedConfig is ModeConfig in a process where cuBLASLt and cuDNN load
// when libraries is true and do not when it is false, decided without
// loading them: the configuration a GPU host would choose, for a program
// generated on a machine without one (frontend.PTXOnly).
func AssumedConfig(mode exec.Mode, module *ir.Operation, libraries bool) togpu.Config {
	load := func() error { return nil }
	if !libraries {
		load = func() error { return errAssumedAbsent }
	}
	return modeConfig(mode, module, load, load)
}

// errAssumedAbsent is AssumedConfig's answer for a library assumed not to load.
var errAssumedAbsent = errors.New("assumed not to load")

// modeConfig is ModeConfig with the libraries' loaders given.
func modeConfig(mode exec.Mode, module *ir.Operation, blasLt, dnn func() error) togpu.Config {
	cfg := togpu.DefaultConfig
	if module == nil || hasHalfConvs(module) || hasHalfMatmuls(module) && !ownMatmuls(module) {
		// cuBLASLt starts loading now, while cuDNN loads: each library is
		// hundreds of megabytes, and a first compile waits for them.
		blasLt = inBackground(blasLt)
	}
	cfg.CuDNN = convPolicy(mode, module, blasLt, dnn)
	if module != nil && !hasHalfMatmuls(module) {
		return cfg
	}
	if module != nil && ownMatmuls(module) {
		logs.Printf(Topic, "%s mode: matmuls on Strata's kernels (%s = %q)", modeName(mode), MatmulAttr, togpu.MatmulMMA)
		return cfg
	}
	if err := blasLt(); err != nil {
		logs.Printf(Topic, "%s mode: matmuls on Strata's kernels: %v", modeName(mode), err)
		return cfg
	}
	logs.Printf(Topic, "%s mode: bf16/f16 matmuls of static shape on cuBLASLt, epilogues as kernels (matmul=%s)",
		modeName(mode), togpu.MatmulCuBLASLt)
	cfg.CuBLASLt = true
	return cfg
}

// inBackground calls load at once on a goroutine of its own and returns
// a function that waits for its error, as often as it is called.
func inBackground(load func() error) func() error {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = load()
	}()
	return func() error {
		<-done
		return err
	}
}

// convPolicy is ModeConfig's choice for convolutions: when module has
// bf16 or f16 graph.conv2d ops and cuDNN and cuBLASLt load in this
// process, they run on cuDNN (conv=cudnn; unstrided 1×1 windows as
// cuBLASLt products) with their epilogue as one pointwise kernel, as
// Inductor's default runs convolutions on cuDNN: measured on the H200
// (bench/NOTES.md, session 8), ResNet-50's 3×3 convolutions with their
// batch-norm and ReLU take 0.07–0.11 ms on cuDNN in NCHW and 0.21–0.42
// on Strata's implicit-GEMM kernels. Convolutions the library plan rejects (padding that differs
// between the sides, a bias added before the rounding) stay on Strata's
// kernels in the same program, and without the library all do: that is
// logged once a process under STRATA_LOGS=autotune. A program without
// such convolutions does not load the library.
func convPolicy(mode exec.Mode, module *ir.Operation, blasLt, dnn func() error) bool {
	if module != nil && !hasHalfConvs(module) {
		return false
	}
	// Unstrided 1×1 convolutions run on cuBLASLt under conv=cudnn.
	err := dnn()
	if err == nil {
		err = blasLt()
	}
	if err != nil {
		noCuDNN.Do(func() {
			logs.Printf(Topic, "%s mode: convolutions on Strata's kernels (cuDNN or cuBLASLt does not load): %v", modeName(mode), err)
		})
		return false
	}
	logs.Printf(Topic, "%s mode: bf16/f16 convolutions on cuDNN, epilogues as kernels (conv=%s)", modeName(mode), togpu.ConvCuDNN)
	return true
}

// hasHalfConvs reports whether module holds a graph.conv2d with a bf16 or
// f16 result.
func hasHalfConvs(module *ir.Operation) bool {
	found := false
	module.Walk(func(op *ir.Operation) bool {
		if found {
			return false
		}
		if op.Name() == graph.OpConv2D && op.NumResults() == 1 {
			if e := ir.ElementTypeOf(op.Result(0).Type()); e == ir.BF16 || e == ir.F16 {
				found = true
			}
		}
		return !found
	})
	return found
}

// hasHalfMatmuls reports whether module holds a graph.matmul or
// graph.attention with a bf16 or f16 result: what can become a
// library-computable matmul nest.
func hasHalfMatmuls(module *ir.Operation) bool {
	found := false
	module.Walk(func(op *ir.Operation) bool {
		if found {
			return false
		}
		if (op.Name() == graph.OpMatmul || op.Name() == graph.OpAttention) && op.NumResults() == 1 {
			if e := ir.ElementTypeOf(op.Result(0).Type()); e == ir.BF16 || e == ir.F16 {
				found = true
			}
		}
		return !found
	})
	return found
}

// LowerPipeline returns the pipeline that lowers module, a graph-level
// module, to the gpu level in mode under ModeConfig's policy: lower-to-gpu's
// passes with convert-loop-to-gpu configured by ModeConfig(mode, module)
// (lower-to-gpu itself when that is the default configuration). It is the
// body of a module pipeline: run it as
// passes.Parse("builtin.module(" + LowerPipeline(mode, module) + ")").
func LowerPipeline(mode exec.Mode, module *ir.Operation) string {
	return LowerPipelineFor(ModeConfig(mode, module))
}

// EnvChannelsLast names the environment variable that, set to "off",
// keeps LowerPipelineFor's convolutions NCHW under conv=cudnn (to measure
// the layout's effect); another value is graph-channels-last's option
// text (such as "pad-channels=8").
const EnvChannelsLast = "STRATA_CHANNELS_LAST"

// LowerPipelineFor is lower-to-gpu's passes with convert-loop-to-gpu
// configured by cfg: lower-to-gpu itself for the default configuration.
// With the matmuls on cuBLASLt, graph-fuse leaves their epilogues to the
// consumers' kernels (matmul-library): the library stores the product
// either way, and a separate epilogue kernel would store its result again
// for the next kernel to read (GPT-2's bias and residual adds join the
// layer norm's row kernel instead); likewise with the convolutions on
// cuDNN (conv-library: ResNet's stem batch norm and ReLU join the max
// pool's kernel).
//
// With the convolutions on cuDNN, graph-channels-last stores the
// convolution stacks NHWC: cuDNN's channels-last convolutions were
// 1.2–1.9× faster than its NCHW ones on ResNet-50's shapes (bench/NOTES.md,
// session 8), and the unstrided 1×1 ones become products [N·H·W, C]·[C, O].
func LowerPipelineFor(cfg togpu.Config) string {
	toLoop := lower.LowerToLoop
	if env := os.Getenv(EnvChannelsLast); cfg.CuDNN && env != "off" {
		toLoop = func(fuse string) string { return lower.LowerToLoopChannelsLast(env, fuse) }
	}
	return lowerPipeline(cfg, toLoop)
}

// ChannelsLastPass is the graph-channels-last pass (with the options
// STRATA_CHANNELS_LAST gives) that LowerPipelineFor runs under cfg, or ""
// where it runs none (the convolutions not on cuDNN, or the variable
// "off"). A training step runs it on the function it differentiates,
// before autodiff: the forward and backward passes are then both channels
// last, where the layout chosen for each alone would transpose every
// activation the forward saves.
func ChannelsLastPass(cfg togpu.Config) string {
	env := os.Getenv(EnvChannelsLast)
	switch {
	case !cfg.CuDNN || env == "off":
		return ""
	case env != "":
		return layout.PassName + "{" + env + "}"
	}
	return layout.PassName
}

func lowerPipeline(cfg togpu.Config, toLoop func(fuse string) string) string {
	if cfg == togpu.DefaultConfig {
		return "lower-to-gpu" // the same passes, under their registered name
	}
	var fuse []string
	if cfg.CuBLASLt {
		fuse = append(fuse, "matmul-library=true")
	}
	if cfg.CuDNN {
		fuse = append(fuse, "conv-library=true")
	}
	return toLoop(strings.Join(fuse, " ")) + "," + GPUPipeline(cfg)
}

func modeName(m exec.Mode) string {
	if m == "" {
		return string(exec.ModeDefault)
	}
	return string(m)
}
