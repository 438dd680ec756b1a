package frontend_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	gpudialect "github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/exec"
)

// TestPTXOnly compiles a bf16 product with a bias and ReLU with the
// PTXOnly backend: the program it hands over holds PTX for the kernels
// and, with the libraries taken to load, the product as a cuBLASLt call
// (on its own kernels without them); the call fails with ErrPTXOnly
// after its passes and code generation were timed; and the nvptx
// backend's options are checked as the nvptx backend checks them.
func TestPTXOnly(t *testing.T) {
	x, w, b := frontend.Rand(1, 64, 32).Cast(frontend.BFloat16), frontend.Rand(2, 32, 48).Cast(frontend.BFloat16), frontend.Rand(3, 48).Cast(frontend.BFloat16)
	fn := func(x, w, b *frontend.Tensor) *frontend.Tensor { return x.MatMul(w).Add(b).Relu() }
	for _, libraries := range []bool{true, false} {
		var (
			mu    sync.Mutex
			progs []*exec.Program
			libs  int
		)
		name := "ptxonly-" + t.Name()
		frontend.RegisterBackend(name, frontend.PTXOnly(frontend.PTXOnlyOptions{Major: 9, Minor: 0, Libraries: libraries,
			Keep: func(g *frontend.Graph, prog *exec.Program, times frontend.CompileTimes) {
				mu.Lock()
				defer mu.Unlock()
				progs = append(progs, prog)
				g.Module.Walk(func(op *ir.Operation) bool {
					if op.Name() == gpudialect.LibraryMatmulOp {
						libs++
					}
					return true
				})
				if times.Passes <= 0 || times.Codegen <= 0 {
					t.Errorf("libraries %v: passes %v, codegen %v", libraries, times.Passes, times.Codegen)
				}
			}}))
		c, err := frontend.Compile(fn, frontend.Options{Backend: name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(x, w, b); !errors.Is(err, frontend.ErrPTXOnly) {
			t.Fatalf("libraries %v: call: %v, want ErrPTXOnly", libraries, err)
		}
		if len(progs) != 1 {
			t.Fatalf("libraries %v: %d programs kept, want 1", libraries, len(progs))
		}
		kernels := 0
		for _, text := range progs[0].PTX() {
			kernels += strings.Count(text, ".entry ")
		}
		if want := map[bool]int{true: 1, false: 0}[libraries]; libs != want || kernels == 0 {
			t.Errorf("libraries %v: %d cuBLASLt products, %d kernels; want %d products and some kernels", libraries, libs, kernels, want)
		}
		if ct := c.CompileTimes(); ct.Codegen <= 0 || ct.Passes <= 0 || ct.Load != 0 || ct.Device != 0 {
			t.Errorf("libraries %v: compile times %v, want passes and codegen only", libraries, ct)
		}
	}

	name := "ptxonly-options-" + t.Name()
	frontend.RegisterBackend(name, frontend.PTXOnly(frontend.PTXOnlyOptions{}))
	c, err := frontend.Compile(fn, frontend.Options{Backend: name, BackendOptions: map[string]any{"ptx_target": "sm_70"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(x, w, b); err == nil || !strings.Contains(err.Error(), `ptx_target "sm_70"`) {
		t.Errorf("ptx_target sm_70: %v, want the option's error", err)
	}
}

// TestGradChannelsLast differentiates two bf16 3×3 convolutions with a
// ReLU and a mean between them with the PTXOnly backend, the libraries
// taken to load: the layout is chosen on the function before autodiff,
// so both passes are channels last, the backward pass's weight
// gradients cuDNN's NHWC filter gradients and no activation transposed
// between the passes. STRATA_CHANNELS_LAST=off keeps both NCHW.
func TestGradChannelsLast(t *testing.T) {
	x := frontend.Rand(1, 2, 8, 6, 6).Cast(frontend.BFloat16)
	w1, w2 := frontend.Rand(2, 8, 8, 3, 3).Cast(frontend.BFloat16), frontend.Rand(3, 8, 8, 3, 3).Cast(frontend.BFloat16)
	loss := func(x, w1, w2 *frontend.Tensor) *frontend.Tensor {
		pad := frontend.Conv2DOptions{Padding: []int{1, 1}}
		h := frontend.Conv2D(x, w1, nil, pad).Relu()
		return frontend.Conv2D(h, w2, nil, pad).Cast(frontend.Float32).Mean(nil, false)
	}
	for _, off := range []bool{false, true} {
		if off {
			t.Setenv("STRATA_CHANNELS_LAST", "off")
		}
		var (
			mu     sync.Mutex
			counts = map[string]map[string]int{}
		)
		name := "ptxonly-" + t.Name()
		frontend.RegisterBackend(name, frontend.PTXOnly(frontend.PTXOnlyOptions{Major: 9, Minor: 0, Libraries: true,
			Keep: func(g *frontend.Graph, prog *exec.Program, times frontend.CompileTimes) {
				mu.Lock()
				defer mu.Unlock()
				n := map[string]int{}
				g.Module.Walk(func(op *ir.Operation) bool {
					if op.Name() == gpudialect.LibraryConv2DOp {
						geo, err := gpudialect.LibraryConvGeometry(op)
						if err != nil {
							t.Error(err)
						}
						n[fmt.Sprintf("%s nhwc=%v", geo.Direction, geo.ChannelsLast)]++
					}
					return true
				})
				counts[g.Func] = n
			}}))
		_, err := frontend.Grad(loss, 1, 2).WithOptions(frontend.Options{Backend: name}).Call(x, w1, w2)
		if !errors.Is(err, frontend.ErrPTXOnly) {
			t.Fatalf("off %v: %v, want ErrPTXOnly", off, err)
		}
		var fwd, bwd map[string]int
		for fn, n := range counts {
			switch {
			case strings.HasSuffix(fn, "_fwd"):
				fwd = n
			case strings.HasSuffix(fn, "_bwd"):
				bwd = n
			}
		}
		// Forward: the two convolutions; backward: the second's data
		// gradient and both weight gradients.
		layout := !off
		wantFwd := map[string]int{fmt.Sprintf("%s nhwc=%v", gpudialect.ConvForward, layout): 2}
		wantBwd := map[string]int{fmt.Sprintf("%s nhwc=%v", gpudialect.ConvForward, layout): 1, fmt.Sprintf("%s nhwc=%v", gpudialect.ConvBackwardFilter, layout): 2}
		if fmt.Sprint(fwd) != fmt.Sprint(wantFwd) || fmt.Sprint(bwd) != fmt.Sprint(wantBwd) {
			t.Errorf("off %v: library convolutions forward %v, backward %v; want %v and %v", off, fwd, bwd, wantFwd, wantBwd)
		}
	}
}
