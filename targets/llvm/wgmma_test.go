package llvm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// wgmmaSharedKernel holds a gpu.wgmma whose A (a_shared) and B are both
// read from one workgroup buffer, A at element 4096, B at 0.
const wgmmaSharedKernel = `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%out: memref<?xf32>) workgroup(%buf : memref<8192xbf16, 3>) kernel {
      %tid = gpu.thread_id x
      %a = arith.constant 4096 : index
      %b = arith.constant 0 : index
      %c = arith.constant 1.0 : f32
      %d:4 = "gpu.wgmma"(%buf, %a, %buf, %b, %c, %c, %c, %c) <{ab_type = bf16, k_steps = 4 : i64, n = 8 : i64, a_shared}> : (memref<8192xbf16, 3>, index, memref<8192xbf16, 3>, index, f32, f32, f32, f32) -> (f32, f32, f32, f32)
      loop.store %d#3, %out[%tid] : memref<?xf32>
      gpu.return
    }
  }
}
`

// TestWGMMASharedA translates gpu.wgmma with A from workgroup memory: one
// wgmma.mma_async a k-step with an A descriptor (its own operand, the
// k-step's 32 bytes on) and a B descriptor, A's transpose flag 0 before
// B's, the accumulators tied; the native backend's PTX assembles for
// sm_90a.
func TestWGMMASharedA(t *testing.T) {
	m, err := llvm.Translate(llvm.GPUModules(parse(t, wgmmaSharedKernel))[0])
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	steps := regexp.MustCompile(`wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.bf16\.bf16 \{\$0, \$1, \$2, \$3\}, \$(\d+), \$(\d+), 1, 1, 1, 0, 0;`).FindAllStringSubmatch(text, -1)
	if len(steps) != 4 {
		t.Fatalf("want 4 k-steps with descriptor A, got %d:\n%s", len(steps), text)
	}
	seen := map[string]bool{}
	for _, s := range steps {
		if seen[s[1]] || seen[s[2]] {
			t.Errorf("descriptor operand reused: %v", s)
		}
		seen[s[1]], seen[s[2]] = true, true
	}
	if !strings.Contains(text, `"=f,=f,=f,=f,l,l,l,l,l,l,l,l,0,1,2,3"`) {
		t.Errorf("constraints not as expected:\n%s", text)
	}
	ptx, err := nvptx.Native{}.Compile(m, nvptx.Options{Target: "sm_90a"})
	if err != nil {
		t.Fatal(err)
	}
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	f := filepath.Join(t.TempDir(), "k.ptx")
	if err := os.WriteFile(f, []byte(ptx), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ptxas, "-arch=sm_90a", "-o", os.DevNull, f).CombinedOutput(); err != nil {
		t.Fatalf("ptxas rejected the PTX: %v\n%s\n%s", err, out, ptx)
	}
}
