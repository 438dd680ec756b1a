package togpu_test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// wgmmaSASS returns the SASS instructions (opcode and operands) of the key
// loop that the offline ptxas makes of f's native PTX for sm_90a
// (relocatable, as the driver's linker compiles it), or
// skips t without ptxas and cuobjdump.
func wgmmaSASS(t *testing.T, f togpu.Flash) []string {
	t.Helper()
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	real, err := filepath.EvalSymlinks(ptxas)
	if err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	cuobjdump := filepath.Join(filepath.Dir(real), "cuobjdump")
	if _, err := os.Stat(cuobjdump); err != nil {
		t.Skip("no cuobjdump beside ptxas")
	}
	m := flashModule(t, dialects.NewContext(), f)
	mod, err := llvm.Translate(llvm.GPUModules(m)[0])
	if err != nil {
		t.Fatal(err)
	}
	ptx, err := nvptx.Native{}.Compile(mod, nvptx.Options{Target: "sm_90a"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "k.ptx"), filepath.Join(dir, "k.cubin")
	if err := os.WriteFile(src, []byte(ptx), 0o644); err != nil {
		t.Fatal(err)
	}
	// (-c: relocatable code, as the driver's linker compiles it for the
	// runtime: the SASS the device runs; the specialized tilings, whose
	// setmaxnreg needs it, whole, as the runtime loads them.)
	args := []string{"-arch=sm_90a", "-O3", "-c", "-o", bin, src}
	if f.Tiling().Specialized {
		args = slices.Delete(args, 2, 3)
	}
	if out, err := osexec.Command(ptxas, args...).CombinedOutput(); err != nil {
		t.Fatalf("ptxas: %v\n%s", err, out)
	}
	out, err := osexec.Command(cuobjdump, "-sass", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("cuobjdump: %v\n%s", err, out)
	}
	// The key loop: the backward branch whose body holds the most HGMMA
	// and no EXIT.
	var addrs []int64
	var sass []string
	for _, m := range sassLine.FindAllStringSubmatch(string(out), -1) {
		a, _ := strconv.ParseInt(m[1], 16, 64)
		addrs, sass = append(addrs, a), append(sass, strings.TrimSpace(m[2]))
	}
	best, bestN := []string(nil), 0
	for i, in := range sass {
		m := branchTarget.FindStringSubmatch(in)
		if m == nil {
			continue
		}
		target, _ := strconv.ParseInt(m[1], 0, 64)
		if target >= addrs[i] {
			continue
		}
		from := i
		for from > 0 && addrs[from-1] >= target {
			from--
		}
		if countIn(sass[from:i+1], "EXIT") > 0 {
			continue // (a retry stub after the kernel's end, branching back into it)
		}
		if n := countIn(sass[from:i+1], "HGMMA"); n > bestN {
			best, bestN = sass[from:i+1], n
		}
	}
	if best == nil {
		t.Fatal("no loop with HGMMA in the kernel")
	}
	return best
}

// The one-warpgroup pipelined tilings the SASS tests read (the defaults'
// key loops; WGMMATile's add the staged store after them): 64x128gplq,
// 64x64gplvq and 64x64gplqk.
var (
	gplq  = togpu.FlashTile{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true}
	gplvq = togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true}
	gplqk = togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true}
)

var (
	sassLine     = regexp.MustCompile(`(?m)^\s+/\*([0-9a-f]{4})\*/\s+(.*?)\s*;`)
	branchTarget = regexp.MustCompile(`BRA (0x[0-9a-f]+)`)
)

// TestFlashWGMMASASS checks, in the SASS of the non-causal bench-sized
// kernels, the two things about ptxas the wgmma kernels are built around
// (bench/NOTES.md, sessions 4 and 5): 64x64g loads Q's fragments (LDSM)
// inside the key loop, before the S product, so no wgmma A register is
// loop-invariant; the pipelined tilings (64x64gp and the defaults, d64
// and d128) wait for P·V (WARPGROUP.DEPBAR 0) only after every
// exponential of the tile's probabilities, and keep S's and O's
// accumulators in different registers; with OneK the next K tile is
// copied only after S's wait. The loops convert nothing but P's pairs.
func TestFlashWGMMASASS(t *testing.T) {
	f := togpu.Flash{Batch: 256, Lq: 1024, Lk: 1024, D: 64, Scale: 0.125, Elem: ir.BF16}
	t.Run("64x64g", func(t *testing.T) {
		f.Tile = togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true}
		loop := wgmmaSASS(t, f)
		firstMMA := indexOf(loop, "HGMMA")
		if n := countIn(loop[:max(firstMMA, 0)], "LDSM"); firstMMA < 0 || n != 4 {
			t.Errorf("%d LDSM before the loop's first HGMMA, want Q's 4:\n%s", n, strings.Join(loop, "\n"))
		}
	})
	tma := togpu.FlashTile{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, TMA: true}
	oneKTMA := togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, TMA: true, Cluster: 2}
	for _, c := range []struct {
		d    int64
		tile togpu.FlashTile
	}{
		{64, togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true}}, {64, gplq}, {64, gplvq},
		{128, gplqk}, {64, tma}, {128, oneKTMA},
	} {
		tile := c.tile
		t.Run(fmt.Sprintf("d%d-%v", c.d, tile), func(t *testing.T) {
			f.Tile, f.D = tile, c.d
			loop := wgmmaSASS(t, f)
			if tile.OneK {
				// K(kt+1) is copied into the one K stage only after S(kt)
				// (P·V's wait_group 1, which waits for S) in SASS too.
				// (With TMA, V(kt)'s copy precedes the products: K's is
				// the one after S's wait.)
				sWait := indexOf(loop, "WARPGROUP.DEPBAR.LE gsb0, 0x1")
				copy := indexOf(loop, "LDGSTS")
				if tile.TMA && sWait >= 0 {
					if copy = indexOf(loop[sWait:], "UTMALDG"); copy >= 0 {
						copy += sWait
					}
				}
				if sWait < 0 || copy < sWait {
					t.Errorf("the loop's first copy (at %d) comes before S's wait (at %d)", copy, sWait)
				}
			}
			// A thread's probabilities of a tile: 64 rows × Keys keys over
			// 128 threads (Lazy's rescaling factors come after the wait).
			wait := -1
			for i, in := range loop {
				if strings.HasPrefix(in, "WARPGROUP.DEPBAR.LE gsb0, 0x0") {
					wait = i
					break
				}
			}
			if n := countIn(loop[:max(wait, 0)], "MUFU.EX2"); wait < 0 || int64(n) < tile.Keys/2 {
				t.Errorf("P·V's wait (at %d) comes after %d exponentials, want the tile's %d", wait, n, tile.Keys/2)
			}
			acc := map[string]bool{}
			for _, in := range loop {
				if strings.HasPrefix(in, "HGMMA") {
					acc[strings.Fields(in)[1]] = true
				}
			}
			if len(acc) != 2 {
				t.Errorf("the loop's HGMMA accumulate into %v, want two blocks (S and O)", acc)
			}
			// graph.attention's scores stay f32: the only conversions
			// are the packs of the thread's Keys/2 probabilities, two a
			// conversion.
			if n := countIn(loop, "F2FP"); int64(n) != tile.Keys/4 {
				t.Errorf("the loop has %d F2FP, want the %d packs of P (a score rounded to the element type?)", n, tile.Keys/4)
			}
		})
	}
}

// TestFlashWGMMAMoves checks that LatePack and Unroll do what they are
// for: the key loop of their tilings moves at most half as many registers
// (MOV, IMAD.MOV) as the loop of the tiling without them, whose P
// fragments, still read by the P·V in flight, move into the loop-carried
// registers at the end of every tile.
func TestFlashWGMMAMoves(t *testing.T) {
	moves := func(t *testing.T, f togpu.Flash) int {
		n := 0
		for _, in := range wgmmaSASS(t, f) {
			if strings.HasPrefix(in, "MOV ") || strings.HasPrefix(in, "IMAD.MOV") {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		d          int64
		base, with togpu.FlashTile
	}{
		{64, gplq, togpu.FlashTile{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, LatePack: true}},
		{128, gplqk, togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, Unroll: true}},
	} {
		t.Run(fmt.Sprintf("d%d-%v", c.d, c.with), func(t *testing.T) {
			f := togpu.Flash{Batch: 256, Lq: 1024, Lk: 1024, D: c.d, Scale: 0.125, Elem: ir.BF16, Tile: c.base}
			base := moves(t, f)
			f.Tile = c.with
			with := moves(t, f)
			if c.with.Unroll {
				base *= 2 // (two tiles a trip)
			}
			if 2*with > base {
				t.Errorf("%d register moves in %v's loop, %d in %v's: want at most half", with, c.with, base, c.base)
			}
			t.Logf("%v: %d moves, %v: %d", c.base, base, c.with, with)
		})
	}
}

func indexOf(xs []string, prefix string) int {
	for i, x := range xs {
		if strings.HasPrefix(x, prefix) {
			return i
		}
	}
	return -1
}

func countIn(xs []string, prefix string) int {
	n := 0
	for _, x := range xs {
		if strings.HasPrefix(x, prefix) {
			n++
		}
	}
	return n
}

// TestFlashWGMMAUniform checks that no gpu.wgmma or gpu.wgmma_wait of a
// wgmma kernel sits in a loop.if whose condition depends on a float: PTX's
// wgmma instructions are .aligned (every thread of the warpgroup must
// execute the same one), and a condition computed from the scores, such as
// Lazy's "a row of this thread moved", differs between threads — the
// device hung on that in session 5 while the interpreter, which does not
// model .aligned, ran it. Conditions on the tile index and the shape are
// the same in every thread.
func TestFlashWGMMAUniform(t *testing.T) {
	for _, tile := range togpu.FlashTiles {
		if !tile.WGMMA {
			continue
		}
		for _, c := range []struct {
			d      int64
			causal bool
		}{{64, false}, {64, true}, {128, false}, {128, true}} {
			f := togpu.Flash{Batch: 1, Lq: 40, Lk: 70, D: c.d, Causal: c.causal, Scale: 0.125, Elem: ir.BF16, Tile: tile}
			if f.Check() != nil {
				continue
			}
			t.Run(fmt.Sprintf("%v-d%d-causal=%v", tile, c.d, c.causal), func(t *testing.T) {
				m := flashModule(t, dialects.NewContext(), f)
				checked := 0
				m.Walk(func(op *ir.Operation) bool {
					if op.Name() != gpu.WGMMAOp && op.Name() != gpu.WGMMAWaitOp {
						return true
					}
					checked++
					for p := op.ParentOp(); p != nil; p = p.ParentOp() {
						if p.Name() == loop.IfOp && dependsOnFloat(p.Operand(0), map[*ir.Value]bool{}) {
							t.Errorf("%s under a loop.if on a float-derived condition (%s)", op.Name(), p.Loc())
						}
					}
					return true
				})
				if checked == 0 {
					t.Fatal("no gpu.wgmma in the kernel")
				}
			})
		}
	}
}

// dependsOnFloat reports whether v is computed from a float value.
func dependsOnFloat(v *ir.Value, seen map[*ir.Value]bool) bool {
	if seen[v] {
		return false
	}
	seen[v] = true
	if _, ok := v.Type().(*ir.FloatType); ok {
		return true
	}
	op := v.DefiningOp()
	if op == nil {
		return false
	}
	for _, o := range op.Operands() {
		if dependsOnFloat(o, seen) {
			return true
		}
	}
	return false
}
