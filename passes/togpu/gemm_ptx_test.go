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
	"github.com/strata-ir/strata/internal/testsize"
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
	ptxas := ptxasPath(t)
	// Each tiling through one backend and each backend for some tilings,
	// unless STRATA_TEST_LONG asks for every pair (make test-long).
	backends := nvptx.BackendNames()
	run := testsize.Cover(len(togpu.MMATiles), len(backends), nil)
	for i, tile := range togpu.MMATiles {
		if tile.WGMMA {
			continue // sm_90a: TestWGMMAGemmPTX
		}
		m := lowerGraph(t, mmBiasGelu, fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{mma-tile=%s},canonicalize,cse)", tile))
		mod, err := llvm.TranslateAll(llvm.GPUModules(m))
		if err != nil {
			t.Fatal(err)
		}
		for j, name := range backends {
			if !run(i, j) {
				continue
			}
			t.Run(tile.String()+"/"+name, func(t *testing.T) {
				ptx, ok := backendPTX(t, mod, name)
				if !ok {
					t.Skip("llc backend unavailable")
				}
				out := assemble(t, ptxas, ptx)
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

// ptxasPath returns the offline ptxas, skipping the test without one.
func ptxasPath(t *testing.T) string {
	t.Helper()
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	return ptxas
}

// assemble runs ptxas -v for sm_90 on ptx and returns its report.
func assemble(t *testing.T, ptxas, ptx string) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "k.ptx")
	if err := os.WriteFile(file, []byte(ptx), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := osexec.Command(ptxas, "-arch=sm_90", "-v", "-o", os.DevNull, file).CombinedOutput()
	if err != nil {
		t.Fatalf("ptxas rejected the PTX: %v\n%s", err, out)
	}
	return out
}

// mmaSyncRE is a tensor-core instruction of either element type.
var mmaSyncRE = regexp.MustCompile(`mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.(bf16\.bf16|f16\.f16)\.f32`)

// TestMMAPTXOddSizes checks that every product mmaCases puts on the
// tensor cores, at sizes that are not multiples of the tile nor of 8 and
// in f16, becomes PTX with mma.sync that ptxas accepts, from both
// backends, and that the copies match the rows' alignment: 16-byte
// cp.async only where rows start on 16 bytes, plain loads where they do
// not start on 4.
func TestMMAPTXOddSizes(t *testing.T) {
	ptxas := ptxasPath(t)
	pipeline := mmaPipeline(togpu.DefaultConfig.MMATile)
	// Each case through one backend and each backend for some cases,
	// unless STRATA_TEST_LONG asks for every pair (make test-long).
	backends := nvptx.BackendNames()
	run := testsize.Cover(len(mmaCases), len(backends), func(i, _ int) bool {
		return mmaCases[i].kernels != 0 && mmaCases[i].name != "attention"
	})
	for i, tc := range mmaCases {
		if tc.kernels == 0 || tc.name == "attention" {
			continue
		}
		src := fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.body, tc.result)
		mod, err := llvm.TranslateAll(llvm.GPUModules(lowerGraph(t, src, pipeline)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for j, name := range backends {
			if !run(i, j) {
				continue
			}
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				ptx, ok := backendPTX(t, mod, name)
				if !ok {
					t.Skip("llc backend unavailable")
				}
				if !mmaSyncRE.MatchString(ptx) {
					t.Fatalf("no mma.sync in the PTX")
				}
				assemble(t, ptxas, ptx)
			})
		}
	}
}
