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

// tmaKernel copies a 64 × 64 bf16 box of a tensor map into workgroup
// memory (thread 0 expects its bytes and issues the copy; every thread
// waits for the phase) and stores one element a thread.
const tmaKernel = `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%src: memref<?xbf16> {gpu.tensor_map = {box = array<i64: 64, 64>, inner = array<i64: 72>, swizzle = 128 : i64}}, %out: memref<?xbf16>, %r0: i32, %c0: i32) workgroup(%bars : memref<1xi64, 3>, %buf : memref<4096xbf16, 3>) kernel {
      %tid = gpu.thread_id x
      %z = arith.constant 0 : index
      %one = arith.constant 1 : i32
      %bytes = arith.constant 8192 : i32
      %p0 = arith.constant 0 : i32
      %first = arith.cmpi eq, %tid, %z : index
      "loop.if"(%first) ({
        "gpu.mbarrier_init"(%bars, %z, %one) : (memref<1xi64, 3>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      "loop.if"(%first) ({
        "gpu.mbarrier_expect_tx"(%bars, %z, %bytes) : (memref<1xi64, 3>, index, i32) -> ()
        "gpu.tma_load"(%buf, %z, %bars, %z, %src, %r0, %c0) : (memref<4096xbf16, 3>, index, memref<1xi64, 3>, index, memref<?xbf16>, i32, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "gpu.mbarrier_wait"(%bars, %z, %p0) : (memref<1xi64, 3>, index, i32) -> ()
      %v = loop.load %buf[%tid] : memref<4096xbf16, 3>
      loop.store %v, %out[%tid] : memref<?xbf16>
      gpu.return
    }
  }
}
`

// clusterKernel is tmaKernel in clusters of two blocks: the box is
// multicast to both, each block's thread 0 then arrives at the other's
// second barrier, and the cluster meets before and after.
var clusterKernel = strings.NewReplacer(
	`memref<1xi64, 3>`, `memref<2xi64, 3>`,
	`kernel {`, `kernel attributes {gpu.cluster_size = 2 : i64} {`,
	"      gpu.barrier\n", "      \"gpu.cluster_arrive\"() : () -> ()\n      \"gpu.cluster_wait\"() : () -> ()\n",
	`%r0, %c0) : (`, `%r0, %c0) <{multicast = 3 : i64}> : (`,
	"      gpu.return", `      "gpu.mbarrier_arrive_cluster"(%bars, %tid, %one) : (memref<2xi64, 3>, index, i32) -> ()
      "gpu.cluster_arrive"() : () -> ()
      "gpu.cluster_wait"() : () -> ()
      gpu.return`).Replace(tmaKernel)

// TestTMAPTX translates gpu.tma_load and gpu.mbarrier_expect_tx, checks
// that the tensor map is a 128-byte grid-constant parameter read at its
// own address, compiles the module with both backends and assembles each
// PTX with ptxas for sm_90a.
func TestTMAPTX(t *testing.T) {
	testTMAPTX(t, tmaKernel, []string{"byval([128 x i8]) align 64 %arg0", `!"grid_constant"`,
		"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$2, {$3, $4}], [$1];",
		"mbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1;", "align 1024"},
		[]string{".param .align 64 .b8 k_param_0[128]", "cvta.param.u64", "cp.async.bulk.tensor.2d", "mbarrier.arrive.expect_tx"})
}

// TestClusterPTX is TestTMAPTX for clusters: the cluster size becomes
// .reqnctapercluster (which llc does not write: the nvptx package adds
// it), the copy multicasts, and the remote arrival maps the barrier's
// address into the other block.
func TestClusterPTX(t *testing.T) {
	testTMAPTX(t, clusterKernel, []string{`!"cluster_dim_x", i32 2`, "multicast::cluster [$0], [$2, {$3, $4}], [$1], 3;",
		"mapa.shared::cluster.u32", "barrier.cluster.arrive;"},
		[]string{".reqnctapercluster 2, 1, 1", ".multicast::cluster", "mapa.shared::cluster.u32",
			"mbarrier.arrive.shared::cluster.b64 _,", "barrier.cluster.wait;"})
}

// testTMAPTX translates src, checks the LLVM text for llWant, compiles it
// with both backends, checks each PTX for ptxWant and assembles it with
// ptxas for sm_90a.
func testTMAPTX(t *testing.T, src string, llWant, ptxWant []string) {
	m, err := llvm.Translate(llvm.GPUModules(parse(t, src))[0])
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	for _, want := range llWant {
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
			for _, want := range ptxWant {
				if !strings.Contains(ptx, want) {
					t.Errorf("no %q in the PTX:\n%s", want, ptx)
				}
			}
			f := filepath.Join(t.TempDir(), "k.ptx")
			if err := os.WriteFile(f, []byte(ptx), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(ptxas, "-arch=sm_90a", "-o", os.DevNull, f).CombinedOutput(); err != nil {
				t.Fatalf("ptxas rejected the PTX: %v\n%s\n%s", err, out, ptx)
			}
			if os.Getenv("TMA_DUMP") != "" {
				t.Log(ptx)
			}
		})
	}
}
