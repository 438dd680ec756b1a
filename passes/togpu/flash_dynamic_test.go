package togpu_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// dynamicLengths are the sequence lengths the dynamic flash kernels run
// at: one row, exact 64-row and 64-key tiles, and row and key tails past
// several row blocks and key tiles.
var dynamicLengths = []int64{1, 64, 130}

// TestFlashDynamicSemantics builds each tiling's kernel once for a
// sequence length known at run time (Flash.Dynamic) and runs it in the
// interpreter at every dynamicLengths length, causal and not, against
// the interpreter's graph.attention at that length (the tolerance of
// TestFlashSemantics).
func TestFlashDynamicSemantics(t *testing.T) {
	const tol = 1.0/128 + 1.0/64
	for _, tile := range togpu.FlashTiles {
		for _, causal := range []bool{true, false} {
			d := int64(32)
			if tile.WGMMA {
				d = 64
			}
			f := togpu.Flash{Batch: 2, Lq: ir.Dynamic, Lk: ir.Dynamic, D: d, Causal: causal, Scale: 0.3, Elem: ir.BF16, Tile: tile, Dynamic: true}
			if err := f.Check(); err != nil {
				if tile.WGMMA {
					continue // (a head dim of 128 only, or the like)
				}
				t.Fatalf("%v: %v", tile, err)
			}
			t.Run(fmt.Sprintf("%v-causal=%v", tile, causal), func(t *testing.T) {
				t.Parallel()
				ctx := dialects.NewContext()
				m := flashModule(t, ctx, f)
				if strings.Contains(ir.Sprint(m, ir.PrintOptions{}), fmt.Sprintf("memref<%dx", f.Batch)) {
					t.Errorf("a static buffer in the dynamic kernel's module")
				}
				for _, n := range dynamicLengths {
					c := flashCase{b: 1, h: 2, lq: n, lk: n, d: d, causal: causal, scale: 0.3, elem: ir.BF16}
					q, k, v := c.inputs(t)
					rm, err := ir.Parse(ctx, c.source(), ir.ParseOptions{Filename: "ref.mlir"})
					if err != nil {
						t.Fatal(err)
					}
					want, err := interp.New(rm).Call("main", q, k, v)
					if err != nil {
						t.Fatal(err)
					}
					out, err := interp.NewBuffer(c.elem, []int64{int64(q.Len())})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := interp.New(m).Call("main", flat(t, q), flat(t, k), flat(t, v), out); err != nil {
						t.Fatalf("length %d: %v", n, err)
					}
					got, err := out.Tensor()
					if err != nil {
						t.Fatal(err)
					}
					worst := compare(t, got.Float64s(), want[0].(*interp.Tensor).Float64s(), tol)
					t.Logf("length %d: max |kernel − graph| = %.3g", n, worst)
				}
			})
		}
	}
}

// TestFlashPipelineDynamic lowers attentions whose sequence length is one
// symbolic size with graph-attention-to-flash (mma.sync and wgmma): one
// flash kernel, no decomposed attention, and the lowered program computes
// what the graph does at one row and at a length with row and key tails
// (TestFlashDynamicSemantics covers more). Attentions whose
// queries and keys have different (or unnamed) dynamic lengths stay
// decomposed, as the backward stays.
func TestFlashPipelineDynamic(t *testing.T) {
	typ := func(d int64, l string) string {
		return fmt.Sprintf("tensor<1x2x?x%dxbf16, #graph.dims<[1, 2, %s, %d]>>", d, l, d)
	}
	for _, tc := range []struct {
		name     string
		d        int64
		kLen     string
		causal   bool
		pipeline string
		flash    int
	}{
		{"d32-causal", 32, "s0", true, "graph-attention-to-flash", 1},
		{"d32", 32, "s0", false, "graph-attention-to-flash", 1},
		{"d64-causal-wgmma", 64, "s0", true, "graph-attention-to-flash{wgmma=true}", 1},
		{"d64-wgmma", 64, "s0", false, "graph-attention-to-flash{wgmma=true}", 1},
		{"keys-of-another-length", 32, "s1", false, "graph-attention-to-flash", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, k := typ(tc.d, "s0"), typ(tc.d, tc.kLen)
			src := fmt.Sprintf(`func.func @main(%%q: %s, %%k: %s, %%v: %s) -> %s {
  %%r = "graph.attention"(%%q, %%k, %%v) <{causal = %v, scale = 3.0e-01 : f64}> : (%s, %s, %s) -> %s
  return %%r : %s
}
`, q, k, k, q, tc.causal, q, k, k, q, q)
			pipeline := "builtin.module(" + tc.pipeline + ",lower-to-gpu)"
			m := passtest.Run(t, src, pipeline)
			text := ir.Sprint(m, ir.PrintOptions{})
			if got := strings.Count(text, `mapping = "flash"`); got != tc.flash {
				t.Fatalf("%d flash kernels, want %d", got, tc.flash)
			}
			// (The PTX of a kernel with the length as an argument.)
			if _, err := exec.Compile(m, exec.Options{}); err != nil {
				t.Fatalf("compiling to PTX: %v", err)
			}
			ref, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "ref.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{1, 70} {
				rng := rand.New(rand.NewPCG(uint64(n), 7))
				qs, ks := []int64{1, 2, n, tc.d}, []int64{1, 2, n, tc.d}
				if tc.kLen != "s0" {
					ks[2] = n + 3
				}
				in := []interp.Value{randomBF16(t, rng, qs), randomBF16(t, rng, ks), randomBF16(t, rng, ks)}
				want, err := interp.New(ref).Call("main", in...)
				if err != nil {
					t.Fatal(err)
				}
				bufs := make([]interp.Value, len(in))
				for i, x := range in {
					bufs[i] = interp.BufferFromTensor(x.(*interp.Tensor))
				}
				got, err := interp.New(m).Call("main", bufs...)
				if err != nil {
					t.Fatalf("length %d: %v", n, err)
				}
				if err := passtest.Compare(got[0], want[0]); err != nil {
					t.Errorf("length %d: %v", n, err)
				}
			}
		})
	}
}

// TestFlashDynamicPTX compiles the dynamic-length wgmma kernels (the
// defaults of head dims 64 and 128, causal and not) with the native
// backend and assembles them as the driver's linker does (ptxas -c): the
// kernel's offsets are 64-bit there, and a 64-bit division by a register
// (the block's batch and row block) would be a subroutine call that
// serializes every wgmma (C7509).
func TestFlashDynamicPTX(t *testing.T) {
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	for _, d := range []int64{64, 128} {
		for _, causal := range []bool{false, true} {
			f := togpu.Flash{Batch: 24, Lq: ir.Dynamic, Lk: ir.Dynamic, D: d, Causal: causal, Scale: 0.125, Elem: ir.BF16, Dynamic: true}
			f.Tile = f.WGMMADefault()
			t.Run(fmt.Sprintf("d%d-causal=%v-%v", d, causal, f.Tiling()), func(t *testing.T) {
				t.Parallel()
				m := flashModule(t, dialects.NewContext(), f)
				mod, err := llvm.Translate(llvm.GPUModules(m)[0])
				if err != nil {
					t.Fatal(err)
				}
				ptx, err := nvptx.Native{}.Compile(mod, nvptx.Options{Target: gpu.WGMMATarget})
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(ptx, "div.u64") + strings.Count(ptx, "rem.u64"); n != 0 {
					t.Errorf("%d 64-bit divisions in the PTX", n)
				}
				file := filepath.Join(t.TempDir(), "k.ptx")
				if err := os.WriteFile(file, []byte(ptx), 0o644); err != nil {
					t.Fatal(err)
				}
				// (The specialized tilings' setmaxnreg needs the whole
				// program, which the runtime gives them: exec's
				// wholeProgram.)
				args := []string{"-arch=" + gpu.WGMMATarget, "-v", "-c", "-o", os.DevNull, file}
				if f.Tiling().Specialized {
					args = slices.Delete(args, 2, 3)
				}
				out, err := osexec.Command(ptxas, args...).CombinedOutput()
				if err != nil {
					t.Fatalf("ptxas rejected the PTX: %v\n%s", err, out)
				}
				if strings.Contains(string(out), "serialized") {
					t.Errorf("ptxas serializes the kernel's wgmma:\n%s", out)
				}
			})
		}
	}
}
