package llvm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// atomicKernel adds a value to an element of a global buffer, then two
// to two.
const atomicKernel = `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%out: memref<?xf32>, %i: index, %v: f32) kernel {
      "gpu.atomic_add"(%out, %i, %v) : (memref<?xf32>, index, f32) -> ()
      "gpu.atomic_add"(%out, %i, %v, %v) : (memref<?xf32>, index, f32, f32) -> ()
      gpu.return
    }
  }
}
`

// TestAtomicAddPTX translates gpu.atomic_add to red.global.add.f32 and
// red.global.v2.f32.add, compiles it with both backends for sm_90a (whose
// PTX ISA has red's vector forms) and assembles each PTX with ptxas.
func TestAtomicAddPTX(t *testing.T) {
	m, err := llvm.Translate(llvm.GPUModules(parse(t, atomicKernel))[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"red.global.add.f32 [$0], $1;", "red.global.v2.f32.add [$0], {$1, $2};"} {
		if text := m.String(); !strings.Contains(text, want) {
			t.Fatalf("no %q in\n%s", want, text)
		}
	}
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	for _, be := range []nvptx.Backend{nvptx.Native{}, nvptx.LLC{}} {
		t.Run(be.Name(), func(t *testing.T) {
			if _, ok := be.(nvptx.LLC); ok {
				if _, err := nvptx.FindLLC(); err != nil {
					t.Skip(err)
				}
			}
			ptx, err := be.Compile(m, nvptx.Options{Target: "sm_90a"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ptx, "red.global.add.f32 [%rd") || !strings.Contains(ptx, "red.global.v2.f32.add [%rd") {
				t.Errorf("no red.global.add.f32 and red.global.v2.f32.add of a 64-bit address in\n%s", ptx)
			}
			f := filepath.Join(t.TempDir(), "k.ptx")
			if err := os.WriteFile(f, []byte(ptx), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(ptxas, "-arch=sm_90a", "-o", os.DevNull, f).CombinedOutput(); err != nil {
				t.Fatalf("ptxas rejected the PTX: %v\n%s\n%s", err, out, ptx)
			}
		})
	}
}
