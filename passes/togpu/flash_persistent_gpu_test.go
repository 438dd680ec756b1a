package togpu_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// flashPersistentCases are TestGPUFlashPersistent's shapes: with a grid
// of 2 or 3 blocks each block takes two to five row blocks in turn
// (PrefetchQ copies the next one's Q during the current one), the last
// row block a tail, causal diagonals and their alternating turns, both
// head dims, key tails and rescaling.
var flashPersistentCases = []flashCase{
	{2, 1, 300, 200, 128, false, 0, ir.BF16},
	{2, 1, 300, 300, 128, true, 0, ir.BF16},
	{1, 2, 250, 140, 128, true, 0, ir.BF16},
	{2, 1, 200, 330, 64, false, 0, ir.BF16},
	{1, 2, 250, 300, 64, true, 4, ir.BF16},
}

// TestGPUFlashPersistent runs every persistent tiling of FlashTiles on
// the device (skipped without one) with grids of 2 and 3 blocks and
// compares it with the interpreter's graph.attention within
// TestGPUFlash's tolerance. At their own grids (132 or 396 blocks) the
// small shapes of TestGPUFlash give each block one row block at most, so
// only this test runs a block's later row blocks (PrefetchQ's early copy
// of the next Q, the turns of causal rounds) on the device at sizes that
// compute-sanitizer can check (scripts/sanitize-device.sh, family
// flash-fwd-persistent); TestGPUFlashLarge runs them at the bench's
// sizes against the mma.sync kernel, TestFlashPersistentSpecialized in
// the interpreter.
func TestGPUFlashPersistent(t *testing.T) {
	rt := openRuntime(t)
	const tol = 1.0/128 + 1.0/64
	ran := 0
	for _, tc := range flashPersistentCases {
		t.Run(tc.String(), func(t *testing.T) {
			q, k, v := tc.inputs(t)
			ref, err := ir.Parse(dialects.NewContext(), tc.source(), ir.ParseOptions{Filename: "ref.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			want, err := interp.New(ref).Call("main", q, k, v)
			if err != nil {
				t.Fatal(err)
			}
			wantF := want[0].(*interp.Tensor).Float64s()
			for _, tile := range togpu.FlashTiles {
				if tile.Persistent == 0 {
					continue
				}
				for _, p := range []int64{2, 3} {
					tile := tile
					tile.Persistent = p
					f := tc.flash(tile)
					if f.Check() != nil {
						continue // (head dim 64 for the 128-row tilings)
					}
					ran++
					t.Run(fmt.Sprint(tile), func(t *testing.T) {
						if blocks := tc.b * tc.h * ((tc.lq + tile.Rows - 1) / tile.Rows); f.Grid() != p || blocks <= p {
							t.Fatalf("grid %d for %d row blocks: want %d blocks, each taking several", f.Grid(), blocks, p)
						}
						got := runFlash(t, rt, f, q, k, v)
						t.Logf("max |device − graph| = %.3g", compare(t, got, wantF, tol))
					})
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no persistent tiling takes any case")
	}
}
