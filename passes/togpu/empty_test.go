package togpu_test

import (
	"testing"

	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/targets/llvm"
)

// TestLowerToGPUEmptyTensors runs lower-to-gpu on the programs on empty
// tensors (passtest.EmptyTensorPrograms) and checks their results in the
// interpreter, every launch simulated: no load out of bounds, no division
// by an empty extent, no launch of an empty grid.
func TestLowerToGPUEmptyTensors(t *testing.T) {
	progs := passtest.EmptyTensorPrograms()
	if len(progs) < 30 {
		t.Fatalf("%d programs on empty tensors, want at least 30", len(progs))
	}
	for _, pl := range []struct{ name, pipeline string }{
		{"gpu", "builtin.module(lower-to-gpu)"},
		{"index64", "builtin.module(lower-to-loop,convert-loop-to-gpu{block=64 vector=2 max-blocks=3 index-bits=64})"},
		{"index32", "builtin.module(lower-to-loop,convert-loop-to-gpu{index-bits=32},canonicalize,cse)"},
		{"flash", "builtin.module(graph-attention-to-flash,lower-to-gpu)"},
	} {
		for _, p := range progs {
			t.Run(pl.name+"/"+p.Func, func(t *testing.T) {
				if err := passtest.CheckSemantics(p, pl.pipeline, 1); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestEmptyTensorsCompileToPTX takes the kernels lower-to-gpu makes of the
// programs on empty tensors through the native PTX backend (and ptxas
// where installed): buffers of no elements, loops of no trips and the
// launches left compile as any other.
func TestEmptyTensorsCompileToPTX(t *testing.T) {
	compiled := 0
	for _, p := range passtest.EmptyTensorPrograms() {
		t.Run(p.Func, func(t *testing.T) {
			m := lowerGraph(t, p.Source, "builtin.module(lower-to-gpu)")
			mods := llvm.GPUModules(m)
			if len(mods) == 0 {
				return // every output empty: no kernel
			}
			compiled++
			mod, err := llvm.TranslateAll(mods)
			if err != nil {
				t.Fatal(err)
			}
			if ptx, ok := backendPTX(t, mod, "native"); ok {
				ptxasAccepts(t, ptx)
			}
		})
	}
	if compiled < 30 {
		t.Errorf("%d programs with kernels, want at least 30", compiled)
	}
}
