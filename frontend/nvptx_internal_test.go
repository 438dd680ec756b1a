package frontend

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/autotune"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/cudnn"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/targets/nvptx"
)

// TestPTXTargetOption: the nvptx backend's ptx_target option takes the
// portable targets and sm_90a (every kernel for Hopper only, at PTX ISA
// nvptx.WGMMAPTXVersion), and names the values it takes when given another.
func TestPTXTargetOption(t *testing.T) {
	if want := "sm_80|sm_90|sm_90a"; ptxTargets() != want {
		t.Errorf("ptxTargets() = %q, want %q", ptxTargets(), want)
	}
	if d := (nvptxBackend{}).Describe(); !strings.Contains(d, "ptx_target sm_80|sm_90|sm_90a") {
		t.Errorf("Describe() = %q does not list the targets", d)
	}
	fn := func(x *Tensor) *Tensor { return x.Softmax(-1) }
	for target, want := range map[string]string{
		"sm_80":  ".target sm_80",
		"sm_90":  ".target sm_90",
		"sm_90a": ".version " + nvptx.WGMMAPTXVersion + "\n.target sm_90a",
	} {
		name, got := captureBackend(t)
		c, err := Compile(fn, Options{Backend: name, BackendOptions: map[string]any{"ptx_target": target}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(Rand(1, 4, 8)); !errors.Is(err, errGenerated) {
			t.Fatalf("%s: %v", target, err)
		}
		for _, ptx := range (*got)[0].ptx {
			if !strings.Contains(ptx, want) {
				t.Errorf("ptx_target %s: the PTX lacks %q:\n%.300s", target, want, ptx)
			}
		}
	}
	name, _ := captureBackend(t)
	c, err := Compile(fn, Options{Backend: name, BackendOptions: map[string]any{"ptx_target": "sm_70"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(Rand(1, 4, 8)); err == nil || !strings.Contains(err.Error(), `ptx_target "sm_70": want one of sm_80|sm_90|sm_90a`) {
		t.Errorf("ptx_target sm_70: got %v", err)
	}
}

// TestFlashPassTarget checks that the ptx_target option picks the flash
// kernels: wgmma only for sm_90a, whose PTX is Hopper's alone (no GPU
// runtime is open in this test, so no device is asked).
func TestFlashPassTarget(t *testing.T) {
	for target, want := range map[string]string{
		"sm_90a": togpu.FlashPassName + "{wgmma=true}",
		"sm_90":  togpu.FlashPassName,
		"sm_80":  togpu.FlashPassName,
	} {
		if got := (nvptxBackend{}).flashPass(target); got != want {
			t.Errorf("flashPass(%q) = %q, want %q", target, got, want)
		}
	}
}

// TestDeviceConfigTarget checks that the ptx_target option picks the
// tiling of Strata's own matmul kernels: the wgmma one
// (autotune.HopperTile) only for sm_90a, the default elsewhere (no GPU
// runtime is open in this test, so no device is asked).
func TestDeviceConfigTarget(t *testing.T) {
	const own = `func.func @main(%x: tensor<64x32xbf16>, %w: tensor<32x48xbf16>) -> tensor<64x48xbf16> attributes {strata.matmul = "mma"} {
  %r = "graph.matmul"(%x, %w) : (tensor<64x32xbf16>, tensor<32x48xbf16>) -> tensor<64x48xbf16>
  return %r : tensor<64x48xbf16>
}
`
	m, err := ir.Parse(dialects.NewContext(), own, ir.ParseOptions{Filename: "own.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]togpu.MMATile{
		"sm_90a": autotune.HopperTile,
		"sm_90":  togpu.DefaultConfig.MMATile,
		"sm_80":  togpu.DefaultConfig.MMATile,
		"":       togpu.DefaultConfig.MMATile,
	} {
		cfg := nvptxBackend{}.deviceConfig(exec.ModeDefault, m, target)
		if cfg.MMATile != want || cfg.CuBLASLt {
			t.Errorf("deviceConfig(%q): tile %s, cuBLASLt %v; want %s on Strata's kernels", target, cfg.MMATile, cfg.CuBLASLt, want)
		}
	}
}

// TestSpeculativeConfig lowers a bf16 convolution while the libraries'
// loads are taken to be under way: the passes run under the
// configuration that assumes they load, and when the process's answer
// differs (this machine has no cuDNN) the graph is lowered again as it
// was, so that the program calls a library exactly when it loads.
func TestSpeculativeConfig(t *testing.T) {
	speculated := 0
	b := nvptxBackend{capability: &[2]int{9, 0}, startLoads: func(*ir.Operation) bool { speculated++; return true }}
	var libraryOps int
	name := "speculative-" + t.Name()
	RegisterBackend(name, BackendFunc(func(g *Graph) (Executable, error) {
		mode, err := exec.ParseMode(string(g.Mode))
		if err != nil {
			return nil, err
		}
		if _, _, err := b.generate(g, mode); err != nil {
			return nil, err
		}
		g.Module.Walk(func(op *ir.Operation) bool {
			if strings.HasPrefix(op.Name(), "gpu.library_") {
				libraryOps++
			}
			return true
		})
		return nil, errGenerated
	}))
	x := Rand(1, 2, 8, 6, 6).Cast(BFloat16)
	w := Rand(2, 16, 8, 3, 3).Cast(BFloat16)
	c, err := Compile(func(x, w *Tensor) *Tensor { return Conv2D(x, w, nil, Conv2DOptions{Padding: []int{1, 1}}).Relu() }, Options{Backend: name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(x, w); !errors.Is(err, errGenerated) {
		t.Fatalf("want the backend's stop, got %v", err)
	}
	if speculated != 1 {
		t.Fatalf("%d speculative lowerings, want 1", speculated)
	}
	loaded := cudnn.Load() == nil && cublaslt.Load() == nil
	if want := map[bool]int{true: 1, false: 0}[loaded]; libraryOps != want {
		t.Errorf("libraries load: %v; %d library ops in the lowered module, want %d", loaded, libraryOps, want)
	}
}
