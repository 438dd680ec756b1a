package togpu_test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// mmBiasGelu is the bench's mm_bias_gelu: 8192 × 4096 · 4096 × 4096 in
// bf16 with a bias and a tanh gelu.
const mmBiasGelu = `func.func @main(%x: tensor<8192x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<8192x4096xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<8192x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<8192x4096xbf16>, tensor<4096xbf16>) -> tensor<8192x4096xbf16>
  %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  return %2 : tensor<8192x4096xbf16>
}
`

var (
	registersRE = regexp.MustCompile(`Used (\d+) registers`)
	spillRE     = regexp.MustCompile(`(\d+) bytes spill stores, (\d+) bytes spill loads`)
	// scalarStoreRE is a 2-byte store to global memory.
	scalarStoreRE = regexp.MustCompile(`st\.global\.[bu]16\b.*`)
)

// TestMMAPTX compiles the bench's mm_bias_gelu kernel with every tiling
// and both PTX backends, assembles it with the offline ptxas for sm_90
// and checks that no register spills (and that the native backend stores
// the results in pairs); it logs the registers a thread and
// the blocks an SM they and the shared memory leave (65536 registers and
// 228 KiB an SM, 1 KiB of it reserved a block; registers are allocated
// 8 a thread at a time).
func TestMMAPTX(t *testing.T) {
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	for _, tile := range togpu.MMATiles {
		m := lowerGraph(t, mmBiasGelu, fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{mma-tile=%s},canonicalize,cse)", tile))
		mod, err := llvm.TranslateAll(llvm.GPUModules(m))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range nvptx.BackendNames() {
			t.Run(tile.String()+"/"+name, func(t *testing.T) {
				ptx, ok := backendPTX(t, mod, name)
				if !ok {
					t.Skip("llc backend unavailable")
				}
				file := filepath.Join(t.TempDir(), "mm.ptx")
				if err := os.WriteFile(file, []byte(ptx), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := osexec.Command(ptxas, "-arch=sm_90", "-v", "-o", os.DevNull, file).CombinedOutput()
				if err != nil {
					t.Fatalf("ptxas rejected the PTX: %v\n%s", err, out)
				}
				// The epilogue writes each row's pair of bf16 results with
				// one access.
				if name == "native" && scalarStoreRE.MatchString(ptx) {
					t.Errorf("bf16 results stored one by one: %s", scalarStoreRE.FindString(ptx))
				}
				regs, spills := registersRE.FindSubmatch(out), spillRE.FindSubmatch(out)
				if regs == nil || spills == nil {
					t.Fatalf("no register or spill count in\n%s", out)
				}
				r, _ := strconv.Atoi(string(regs[1]))
				if string(spills[1]) != "0" || string(spills[2]) != "0" {
					t.Errorf("spills: %s", spills[0])
				}
				threads := 32 * tile.Warps()
				bySmem := int64(gpu.MaxSharedBytes+1024) / (tile.SharedBytes() + 1024)
				byRegs := int64(65536) / (threads * int64((r+7)/8*8))
				t.Logf("%d registers, %d bytes of shared memory: %d blocks (%d warps) an SM", r, tile.SharedBytes(), min(byRegs, bySmem), min(byRegs, bySmem)*tile.Warps())
			})
		}
	}
}
