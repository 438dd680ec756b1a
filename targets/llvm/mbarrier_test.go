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

// mbarrierKernel is a producer/consumer hand-off: thread 0 initializes
// two barriers, the producer warpgroup (threads 128 on) lowers its
// registers, writes and arrives, the consumer warpgroup raises its
// registers and waits for the phase, twice (two waits in one kernel:
// their labels must not clash), its warps meeting at gpu.warp_sync in
// between.
const mbarrierKernel = `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%out: memref<?xf32>) workgroup(%bars : memref<2xi64, 3>, %buf : memref<128xf32, 3>) kernel attributes {nvvm.maxntid = 256 : i64} {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c128 = arith.constant 128 : index
      %n = arith.constant 128 : i32
      %p0 = arith.constant 0 : i32
      %first = arith.cmpi eq, %tid, %c0 : index
      "loop.if"(%first) ({
        "gpu.mbarrier_init"(%bars, %c0, %n) : (memref<2xi64, 3>, index, i32) -> ()
        "gpu.mbarrier_init"(%bars, %c1, %n) : (memref<2xi64, 3>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      %producer = arith.cmpi uge, %tid, %c128 : index
      "loop.if"(%producer) ({
        "gpu.setmaxnreg"() <{regs = 40 : i64}> : () -> ()
        %i = arith.subi %tid, %c128 : index
        %v = arith.index_cast %i : index to i32
        %f = arith.sitofp %v : i32 to f32
        loop.store %f, %buf[%i] : memref<128xf32, 3>
        "gpu.mbarrier_arrive"(%bars, %c0) : (memref<2xi64, 3>, index) -> ()
        loop.yield
      }, {
        "gpu.setmaxnreg"() <{increase, regs = 232 : i64}> : () -> ()
        "gpu.mbarrier_wait"(%bars, %c0, %p0) : (memref<2xi64, 3>, index, i32) -> ()
        %x = loop.load %buf[%tid] : memref<128xf32, 3>
        loop.store %x, %out[%tid] : memref<?xf32>
        "gpu.warp_sync"() : () -> ()
        "gpu.mbarrier_arrive"(%bars, %c1) : (memref<2xi64, 3>, index) -> ()
        "gpu.mbarrier_wait"(%bars, %c1, %p0) : (memref<2xi64, 3>, index, i32) -> ()
        loop.yield
      }) : (i1) -> ()
      gpu.return
    }
  }
}
`

// TestMbarrierPTX translates the mbarrier ops, gpu.setmaxnreg and
// gpu.warp_sync to inline PTX, compiles the module with both backends and
// assembles each PTX with ptxas for sm_90a.
func TestMbarrierPTX(t *testing.T) {
	m, err := llvm.Translate(llvm.GPUModules(parse(t, mbarrierKernel))[0])
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	for _, want := range []string{"mbarrier.init.shared::cta.b64 [$0], $1;", "mbarrier.arrive.shared::cta.b64 st, [$0];",
		"mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;", "setmaxnreg.dec.sync.aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 232;", "bar.warp.sync -1;"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
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
			if n := strings.Count(ptx, "mbarrier.try_wait.parity"); n != 2 {
				t.Errorf("%d waits in the PTX, want 2", n)
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
