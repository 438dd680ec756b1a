package bench

import (
	"errors"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/autotune"
	"github.com/strata-ir/strata/runtime/exec"
)

// The GPU engine's lowering, run in the interpreter (which simulates
// gpu.launch_func), computes what the reference computes at the small size.
// A workload the lowering does not handle yet is skipped with the reason:
// the benchmark records it as unsupported the same way.
func TestLoweredWorkloadsMatchReference(t *testing.T) {
	for _, w := range Workloads {
		t.Run(w.Name, func(t *testing.T) {
			inst, err := w.Build(Small)
			if err != nil {
				t.Fatal(err)
			}
			ctx, module, err := Load(inst)
			if err != nil {
				t.Fatal(err)
			}
			pm, err := passes.Parse(LowerPipeline)
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, module); err != nil {
				t.Skipf("not supported yet: %v", err)
			}
			if err := checkLowered(module); err != nil {
				t.Fatal(err)
			}
			if _, err := exec.Compile(module, exec.Options{}); err != nil {
				t.Skipf("not supported yet (PTX): %v", err)
			}
			matchReference(t, w, inst, ctx, module)
		})
	}
}

// Without a GPU the engine says so instead of failing later.
func TestNewEngineWithoutGPU(t *testing.T) {
	e, err := NewEngine("nvptx")
	if err == nil {
		e.(*GPU).Close()
		t.Skip("a GPU is present")
	}
	if !errors.Is(err, exec.ErrNoGPU) {
		t.Errorf("error %v does not wrap exec.ErrNoGPU", err)
	}
	if _, err := NewEngine("nope"); err == nil {
		t.Error("NewEngine(nope) succeeded")
	}
}

// The library lowering of the default modes (every static bf16/f16 matmul
// a gpu.library_matmul, the epilogues as kernels), run in the interpreter,
// computes what the reference computes at the small size; the matmul
// workloads, the training step's transposed products included, leave no
// matmul on Strata's kernels.
func TestLibraryLoweringMatchesReference(t *testing.T) {
	cfg := togpu.DefaultConfig
	cfg.CuBLASLt = true
	pipeline := "builtin.module(graph-attention-to-flash,lower-to-loop," + autotune.GPUPipeline(cfg) + ")"
	for _, name := range []string{"mm_bias_gelu", "mlp_train"} {
		t.Run(name, func(t *testing.T) {
			w := Lookup(name)
			inst, err := w.Build(Small)
			if err != nil {
				t.Fatal(err)
			}
			ctx, module, err := Load(inst)
			if err != nil {
				t.Fatal(err)
			}
			graphMatmuls := 0
			module.Walk(func(op *ir.Operation) bool {
				if op.Name() == "graph.matmul" {
					graphMatmuls++
				}
				return true
			})
			pm, err := passes.Parse(pipeline)
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, module); err != nil {
				t.Fatal(err)
			}
			libs := 0
			module.Walk(func(op *ir.Operation) bool {
				if op.Name() == gpu.LibraryMatmulOp {
					libs++
				}
				return true
			})
			if libs != graphMatmuls {
				t.Errorf("%d of %d matmuls on the library", libs, graphMatmuls)
			}
			for _, k := range autotune.Kernels(module) {
				if k.Mapping == togpu.MappingMMA {
					t.Errorf("kernel %s still on the mma mapping", k.Name)
				}
			}
			matchReference(t, w, inst, ctx, module)
		})
	}
}
