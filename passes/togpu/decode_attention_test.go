package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
)

// decodeProgram is a graph.attention of one query a sequence over lk keys
// (batch dims batch, head dim d, element type elt) with an i1 mask of
// shape mask.
func decodeProgram(batch []int64, lk, d int64, mask []int64, elt string, attrs string) string {
	dims := func(s []int64, tail ...int64) string {
		var parts []string
		for _, n := range append(append([]int64{}, s...), tail...) {
			parts = append(parts, fmt.Sprint(n))
		}
		return strings.Join(parts, "x")
	}
	q := fmt.Sprintf("tensor<%sx%s>", dims(batch, 1, d), elt)
	kv := fmt.Sprintf("tensor<%sx%s>", dims(batch, lk, d), elt)
	m := fmt.Sprintf("tensor<%sxi1>", dims(mask))
	return fmt.Sprintf(`func.func @main(%%q: %[1]s, %%k: %[2]s, %%v: %[2]s, %%m: %[3]s) -> %[1]s {
  %%0 = "graph.attention"(%%q, %%k, %%v, %%m)%[4]s : (%[1]s, %[2]s, %[2]s, %[3]s) -> %[1]s
  return %%0 : %[1]s
}`, q, kv, m, attrs)
}

// decodePipeline outlines decode attentions and lowers the rest.
const decodePipeline = "builtin.module(" + togpu.FlashPassName + ",lower-to-loop,convert-loop-to-gpu,canonicalize,cse)"

// TestDecodeAttentionPreservesSemantics lowers decoding attentions (one
// query against a cache of keys, an i1 mask keeping a prefix or random
// keys, broadcast along some batch dims) through the decode kernels and
// runs them in the interpreter against graph.attention: every output
// within 2^-6 of the reference (the kernels round the probabilities
// once, after the combination, where graph.attention rounds them before
// the product with v). Keys in 32-key tiles the mask drops entirely hold
// NaN: the kernels never read them, so the outputs stay those of the
// same cache with zeros there.
func TestDecodeAttentionPreservesSemantics(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.SampledFrom([]int64{8, 16, 32, 64, 128}).Draw(rt, "d")
		lk := rapid.Int64Range(1, 300).Draw(rt, "lk")
		b := rapid.Int64Range(1, 2).Draw(rt, "b")
		h := rapid.Int64Range(1, 3).Draw(rt, "h")
		batch := []int64{b, h}
		var mask []int64
		switch rapid.IntRange(0, 3).Draw(rt, "mask shape") {
		case 0:
			mask = []int64{lk}
		case 1:
			mask = []int64{1, 1, 1, lk}
		case 2:
			mask = []int64{b, 1, 1, lk}
		default:
			mask = []int64{b, h, 1, lk}
		}
		prefix := rapid.Bool().Draw(rt, "prefix")
		elt := rapid.SampledFrom([]string{"bf16", "f16"}).Draw(rt, "elt")
		et := map[string]ir.Type{"bf16": ir.BF16, "f16": ir.F16}[elt]
		// Blocks of 1, 2 or up to 32 warps: split over several blocks a
		// sequence (the second kernel combines them) or one.
		warps := rapid.SampledFrom([]int64{1, 2, 32}).Draw(rt, "max warps")
		defer togpu.SetDecodeMaxWarps(warps)()
		src := decodeProgram(batch, lk, d, mask, elt, "")
		m := lowerGraph(t, src, decodePipeline)
		kernels := int64(1)
		if lk > 32*max(warps, (d+31)/32) { // (a block has a thread an output element)
			kernels = 2
		}
		if got := togpu.LaunchMappings(m); got[togpu.MappingDecode] != int(kernels) || len(got) != 1 {
			rt.Fatalf("kernels %v, want the %d decode kernels alone", got, kernels)
		}
		rng := rand.New(rand.NewPCG(uint64(d), uint64(lk)))
		n := b * h
		// The mask: a prefix of the keys per row, or random keys
		// (about 1 in 8 kept), at least one a row.
		mn := int64(1)
		for _, x := range mask {
			mn *= x
		}
		mv := make([]int64, mn)
		for r := int64(0); r < mn/lk; r++ {
			keep := rng.Int64N(lk) + 1
			for j := range lk {
				if prefix && j < keep || !prefix && (rng.IntN(8) == 0 || j == keep-1) {
					mv[r*lk+j] = 1
				}
			}
		}
		// dropped reports whether key j of sequence z is in a 32-key
		// tile that its mask row keeps nothing of.
		rowOf := func(z int64) int64 {
			if len(mask) < 4 {
				return 0
			}
			bi, hi := z/h, z%h
			if mask[0] == 1 {
				bi = 0
			}
			if mask[1] == 1 {
				hi = 0
			}
			return bi*mask[1] + hi
		}
		dropped := func(z, j int64) bool {
			r := rowOf(z)
			for i := j / 32 * 32; i < min(j/32*32+32, lk); i++ {
				if mv[r*lk+i] != 0 {
					return false
				}
			}
			return true
		}
		draw := func(k int64, scale float64) []float64 {
			vs := make([]float64, k)
			for i := range vs {
				vs[i] = scale * (2*rng.Float64() - 1)
			}
			return vs
		}
		// Scores of a few units (a standard deviation of 3): the softmax
		// picks out some keys.
		q, kk, vv := draw(n*d, 9), draw(n*lk*d, 1), draw(n*lk*d, 1)
		tensor := func(vs []float64, shape ...int64) *interp.Tensor {
			x, err := interp.FromFloat64s(et, shape, vs)
			if err != nil {
				rt.Fatal(err)
			}
			return x
		}
		mt, err := interp.FromInt64s(ir.I1, mask, mv)
		if err != nil {
			rt.Fatal(err)
		}
		kvShape := []int64{b, h, lk, d}
		args := []*interp.Tensor{tensor(q, b, h, 1, d), tensor(kk, kvShape...), tensor(vv, kvShape...), mt}
		ref, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "ref.mlir"})
		if err != nil {
			rt.Fatal(err)
		}
		want, err := interp.New(ref).Call("main", args[0], args[1], args[2], args[3])
		if err != nil {
			rt.Fatal(err)
		}
		// NaN keys and values where the kernels must not look.
		nk, nv := append([]float64{}, kk...), append([]float64{}, vv...)
		for z := range n {
			for j := range lk {
				if dropped(z, j) {
					for e := range d {
						nk[(z*lk+j)*d+e], nv[(z*lk+j)*d+e] = math.NaN(), math.NaN()
					}
				}
			}
		}
		bufs := []interp.Value{interp.BufferFromTensor(args[0]), interp.BufferFromTensor(tensor(nk, kvShape...)),
			interp.BufferFromTensor(tensor(nv, kvShape...)), interp.BufferFromTensor(mt)}
		got, err := interp.New(m).Call("main", bufs...)
		if err != nil {
			rt.Fatal(err)
		}
		gt, err := got[0].(*interp.Buffer).Tensor()
		if err != nil {
			rt.Fatal(err)
		}
		wv, gv := want[0].(*interp.Tensor).Float64s(), gt.Float64s()
		for i := range wv {
			if !(math.Abs(gv[i]-wv[i]) <= 1.0/64) {
				rt.Fatalf("output %d (sequence %d, dim %d): %g, want %g", i, int64(i)/d, int64(i)%d, gv[i], wv[i])
			}
		}
	})
}

// TestDecodeAttentionPTX compiles GPT-2's decoding attention at batch 8
// (12 heads of 64) over a cache of 1024 (one kernel, blocks of 32 warps)
// and of 2048 (two blocks a sequence and the combining kernel) with the
// native backend, assembles it with the offline ptxas for sm_90 and
// checks that no kernel spills or calls a subroutine and that the scores
// kernel reads K and V in 16-byte accesses (8 bf16 a lane, one key row
// per 8 lanes).
func TestDecodeAttentionPTX(t *testing.T) {
	ptxas := ptxasPath(t)
	for _, c := range []struct{ lk, kernels int64 }{{1024, 1}, {2048, 2}} {
		m := lowerGraph(t, decodeProgram([]int64{8, 12}, c.lk, 64, []int64{1, 1, 1, c.lk}, "bf16", ""), decodePipeline)
		mod, err := llvm.TranslateAll(llvm.GPUModules(m))
		if err != nil {
			t.Fatal(err)
		}
		ptx, _ := backendPTX(t, mod, "native")
		out := assemble(t, ptxas, ptx)
		s := spillRE.FindAllSubmatch(out, -1)
		if int64(len(s)) != c.kernels {
			t.Errorf("cache of %d: %d kernels, want %d\n%s", c.lk, len(s), c.kernels, out)
		}
		for _, sp := range s {
			if string(sp[1]) != "0" || string(sp[2]) != "0" {
				t.Errorf("cache of %d: spills: %s", c.lk, sp[0])
			}
		}
		if strings.Contains(ptx, "call.uni") || strings.Contains(ptx, "call ") {
			t.Errorf("cache of %d: a subroutine call in the decode kernels", c.lk)
		}
		// 8 iterations of a K and a V row chunk, and q's chunk.
		if n := len(vector16RE.FindAllString(ptx, -1)); n != 2*8+1 {
			t.Errorf("cache of %d: %d 16-byte loads, want 17\n%s", c.lk, n, ptx)
		}
		t.Logf("cache of %d: %s", c.lk, registersRE.FindAll(out, -1))
	}
}

// vector16RE is a 16-byte global load.
var vector16RE = regexp.MustCompile(`ld\.global(\.[a-z]+)*\.v4\.(b32|u32|f32)|ld\.global(\.[a-z]+)*\.v8\.(b16|u16)`)

// TestDecodeAttentionOutlined checks which attentions
// graph-attention-to-flash takes as decode attentions: one query a
// sequence in bf16 or f16 with an i1 mask over the keys; not a causal
// one, a float mask, two queries, a head dim of 96 (12 lanes a row), a
// mask broadcast along the keys or of another batch size, or f32.
func TestDecodeAttentionOutlined(t *testing.T) {
	decodeQ := func(lq int64, d int64, elt string, mask string, attrs string) string {
		q := fmt.Sprintf("tensor<2x3x%dx%dx%s>", lq, d, elt)
		kv := fmt.Sprintf("tensor<2x3x40x%dx%s>", d, elt)
		return fmt.Sprintf(`func.func @main(%%q: %[1]s, %%k: %[2]s, %%v: %[2]s, %%m: %[3]s) -> %[1]s {
  %%0 = "graph.attention"(%%q, %%k, %%v, %%m)%[4]s : (%[1]s, %[2]s, %[2]s, %[3]s) -> %[1]s
  return %%0 : %[1]s
}`, q, kv, mask, attrs)
	}
	cases := []struct {
		name, src string
		want      bool
	}{
		{"bf16, mask [40]", decodeQ(1, 64, "bf16", "tensor<40xi1>", ""), true},
		{"f16, mask [2,3,1,40], scale", decodeQ(1, 32, "f16", "tensor<2x3x1x40xi1>", " <{scale = 0.5 : f64}>"), true},
		{"mask [2,1,1,40]", decodeQ(1, 128, "bf16", "tensor<2x1x1x40xi1>", ""), true},
		{"causal", decodeQ(1, 64, "bf16", "tensor<40xi1>", " <{causal = true}>"), false},
		{"float mask", decodeQ(1, 64, "bf16", "tensor<40xbf16>", ""), false},
		{"two queries", decodeQ(2, 64, "bf16", "tensor<1x40xi1>", ""), false},
		{"head dim 96", decodeQ(1, 96, "bf16", "tensor<40xi1>", ""), false},
		{"mask along the keys broadcast", decodeQ(1, 64, "bf16", "tensor<1x1x1x1xi1>", ""), false},
		{"mask of 3 sequences", decodeQ(1, 64, "bf16", "tensor<3x1x1x40xi1>", ""), false},
		{"f32", decodeQ(1, 64, "f32", "tensor<40xi1>", ""), false},
	}
	for _, tc := range cases {
		m := lowerGraph(t, tc.src, "builtin.module("+togpu.FlashPassName+")")
		got := false
		m.Walk(func(o *ir.Operation) bool {
			got = got || o.Attr(togpu.DecodeAttr) != nil
			return true
		})
		if got != tc.want {
			t.Errorf("%s: outlined as a decode attention %v, want %v", tc.name, got, tc.want)
		}
	}
}
