package ircmain

import (
	"os"
	"strings"
	"testing"

	"github.com/strata-ir/strata/runtime/exec"
)

// hostPlan is a launch plan with one kernel.
const hostPlan = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @fill(%o: memref<?xf32>, %n: index) kernel {
      %tid = gpu.thread_id x
      %in = arith.cmpi slt, %tid, %n : index
      "loop.if"(%in) ({
        %one = arith.constant 1.0 : f32
        loop.store %one, %o[%tid] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
  }
  func.func @main(%n: index) -> memref<?xf32> {
    %o = loop.alloc(%n) : memref<?xf32>
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @k::@fill blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%o : memref<?xf32>, %n : index)
    return %o : memref<?xf32>
  }
}
`

// noGPU skips a test on machines with a GPU.
func noGPU(t *testing.T) {
	t.Helper()
	if rt, err := exec.Open(0); err == nil {
		rt.Close()
		t.Skip("a GPU is present: the no-GPU path cannot be tested here")
	}
}

// TestRunNVPTXWithoutGPU checks the clear error and exit status 1.
func TestRunNVPTXWithoutGPU(t *testing.T) {
	noGPU(t)
	t.Setenv("STRATA_CACHE_DIR", t.TempDir())
	path := writeFile(t, "plan.mlir", hostPlan)
	r := irc(t, "", "run", "--backend", "nvptx", path, "--random-inputs", "1")
	if r.status != ExitDiagnostics || !strings.Contains(r.stderr, "irc: run: --backend nvptx needs an NVIDIA GPU: ") {
		t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout: %s", r.stdout)
	}
}

// TestRunNVPTXCache checks the compile cache through irc: the first run
// misses and explains why, the second hits, a change of target misses
// and names the target. It needs no GPU: irc compiles before it opens
// the device.
func TestRunNVPTXCache(t *testing.T) {
	noGPU(t)
	dir := t.TempDir()
	t.Setenv("STRATA_CACHE_DIR", dir)
	path := writeFile(t, "plan.mlir", hostPlan)
	run := func(extra ...string) result {
		return irc(t, "", append([]string{"run", "--backend=nvptx", "--explain-cache", path, "--random-inputs", "1"}, extra...)...)
	}
	if r := run(); !strings.Contains(r.stderr, "cache miss for ") || !strings.Contains(r.stderr, "never compiled") {
		t.Fatalf("first run:\n%s", r.stderr)
	}
	entries, _ := os.ReadDir(dir + "/entries")
	if len(entries) != 1 {
		t.Fatalf("%d cache entries after one compile", len(entries))
	}
	if r := run(); strings.Contains(r.stderr, "cache miss") {
		t.Fatalf("second run missed:\n%s", r.stderr)
	}
	r := run("--ptx-target", "sm_80")
	if !strings.Contains(r.stderr, "the target changed") || strings.Contains(r.stderr, "source IR changed") {
		t.Fatalf("target change:\n%s", r.stderr)
	}
	if r := run("--cache=off"); strings.Contains(r.stderr, "cache miss") {
		t.Fatalf("--cache=off consulted the cache:\n%s", r.stderr)
	}
}

// TestRunNVPTXCompileError reports host ops the executor cannot run with
// their location, before looking for a GPU.
func TestRunNVPTXCompileError(t *testing.T) {
	t.Setenv("STRATA_CACHE_DIR", t.TempDir())
	path := writeFile(t, "bad.mlir", `func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
`)
	r := irc(t, "", "run", "--backend", "nvptx", path, "--random-inputs", "1")
	if r.status != ExitDiagnostics || !strings.Contains(r.stderr, "bad.mlir:2:") {
		t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
	}
}
