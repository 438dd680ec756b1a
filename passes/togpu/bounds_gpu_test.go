package togpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestGPUGatherOutOfRange runs an embedding-like gather (bf16 rows of a
// table, plus a tensor) on the device (skipped without one) with indices
// of which about one in eight is out of range (just past either end, and
// ±2⁴⁰), from a static table and from a table of dynamic size (empty
// too): in range the result is the table's row (negative indices from the
// end), out of range zero, plus the added tensor. Under compute-sanitizer
// (scripts/sanitize-device.sh, family gather) no access is outside a
// buffer.
func TestGPUGatherOutOfRange(t *testing.T) {
	rt := openRuntime(t)
	const k, d = 4096, 64
	for _, tc := range []struct {
		name string
		rows int64
		src  string
	}{
		{"static", 1000, `func.func @main(%t: tensor<1000x64xbf16>, %i: tensor<4096xi64>, %p: tensor<4096x64xbf16>) -> tensor<4096x64xbf16> {
  %g = "graph.gather"(%t, %i) <{axis = 0 : i64}> : (tensor<1000x64xbf16>, tensor<4096xi64>) -> tensor<4096x64xbf16>
  %r = "graph.add"(%g, %p) : (tensor<4096x64xbf16>, tensor<4096x64xbf16>) -> tensor<4096x64xbf16>
  return %r : tensor<4096x64xbf16>
}`},
		{"dynamic", 300, dynamicGather},
		{"dynamic-empty", 0, dynamicGather},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := gpuProgram(t, tc.src, "builtin.module(lower-to-gpu)")
			rng := rand.New(rand.NewPCG(uint64(tc.rows), 3))
			table, plus := randomBF16(t, rng, []int64{tc.rows, d}), randomBF16(t, rng, []int64{k, d})
			idx := make([]int64, k)
			for j := range idx {
				switch r := rng.IntN(64); {
				case r < 2:
					idx[j] = tc.rows + int64(r)
				case r < 4:
					idx[j] = -tc.rows - 1 - int64(r-2)
				case r < 6:
					idx[j] = []int64{1 << 40, -1 << 40}[r-4]
				case r < 8:
					idx[j] = rng.Int64N(2*tc.rows+1) - tc.rows - 1
				default:
					idx[j] = rng.Int64N(tc.rows + 1) // 0 for the empty table
				}
			}
			ids, err := interp.FromInt64s(ir.I64, []int64{k}, idx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Run(rt, "main", []interp.Value{table, ids, plus})
			if err != nil {
				t.Fatal(err)
			}
			gt, err := got[0].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			out, tv, pv := gt.Float64s(), table.Float64s(), plus.Float64s()
			bad := 0
			for j, i := range idx {
				in := i >= -tc.rows && i < tc.rows
				if !in {
					bad++
				} else if i < 0 {
					i += tc.rows
				}
				for e := range int64(d) {
					want := 0.0
					if in {
						want = tv[i*d+e]
					}
					// The kernel adds in f32 and rounds to bf16.
					want = roundBF16(float32(want) + float32(pv[int64(j)*d+e]))
					if out[int64(j)*d+e] != want {
						t.Fatalf("index %d (position %d), element %d: %g, want %g", idx[j], j, e, out[int64(j)*d+e], want)
					}
				}
			}
			t.Logf("%d of %d indices out of range", bad, k)
		})
	}
}

// dynamicGather is TestGPUGatherOutOfRange's gather from a table of
// dynamic size.
const dynamicGather = `func.func @main(%t: tensor<?x64xbf16>, %i: tensor<4096xi64>, %p: tensor<4096x64xbf16>) -> tensor<4096x64xbf16> {
  %g = "graph.gather"(%t, %i) <{axis = 0 : i64}> : (tensor<?x64xbf16>, tensor<4096xi64>) -> tensor<4096x64xbf16>
  %r = "graph.add"(%g, %p) : (tensor<4096x64xbf16>, tensor<4096x64xbf16>) -> tensor<4096x64xbf16>
  return %r : tensor<4096x64xbf16>
}`

// roundBF16 rounds a finite v to the nearest bf16 (ties to even).
func roundBF16(v float32) float64 {
	b := math.Float32bits(v)
	b += 0x7fff + (b>>16)&1
	return float64(math.Float32frombits(b &^ 0xffff))
}
