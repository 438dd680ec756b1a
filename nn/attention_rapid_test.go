package nn_test

import (
	"errors"
	"math"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"pgregory.net/rapid"
)

// TestShapesMaskedAttentionRapid draws attentions of one query or a few
// against a cache of keys under a boolean mask (a decoding step's: a
// prefix of the cache, or any pattern keeping a key a row), masks of
// every broadcast shape ([Lk], [1, Lk], [B, 1, 1, Lk], [B, H, Lq, Lk]),
// head dims 8 to 128, bf16, f16 and f32, the default scale or another,
// and checks every model path against attention computed in float64 on
// the same (rounded) inputs. One query with an i1 mask in bf16 or f16
// is the decode-attention kernels' case (fc5a5bb).
func TestShapesMaskedAttentionRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b, h := rapid.IntRange(1, 3).Draw(rt, "batch"), rapid.IntRange(1, 3).Draw(rt, "heads")
		lq := rapid.SampledFrom([]int{1, 1, 1, 2, 5}).Draw(rt, "queries")
		lk := rapid.IntRange(1, 300).Draw(rt, "keys")
		d := rapid.SampledFrom([]int{8, 16, 24, 32, 64, 80, 128}).Draw(rt, "head dim")
		dt := rapid.SampledFrom([]frontend.DType{frontend.BFloat16, frontend.BFloat16, frontend.Float16, frontend.Float32}).Draw(rt, "dtype")
		scale := 0.0
		if rapid.Bool().Draw(rt, "own scale") {
			scale = rapid.Float64Range(0.05, 2).Draw(rt, "scale")
		}
		// The mask's shape: which of (B, H, Lq) it has (1 where it
		// broadcasts), and its rank.
		form := rapid.SampledFrom([]string{"Lk", "1xLk", "Bx1x1xLk", "1x1x1xLk", "BxHxLqxLk"}).Draw(rt, "mask shape")
		if form != "BxHxLqxLk" && lq > 1 {
			form = "BxHxLqxLk"
		}
		mb, mh, mq := 1, 1, 1
		var mshape []int
		switch form {
		case "Lk":
			mshape = []int{lk}
		case "1xLk":
			mshape = []int{1, lk}
		case "Bx1x1xLk":
			mb, mshape = b, []int{b, 1, 1, lk}
		case "1x1x1xLk":
			mshape = []int{1, 1, 1, lk}
		default:
			mb, mh, mq, mshape = b, h, lq, []int{b, h, lq, lk}
		}
		prefix := rapid.Bool().Draw(rt, "prefix mask")
		seed := rapid.Uint64().Draw(rt, "seed")
		g := nn.NewRNG(seed)
		keep := make([]bool, mb*mh*mq*lk)
		bits := g.Uniform(0, 1, len(keep)).Float64s()
		for row := range mb * mh * mq {
			n := 1 + int(bits[row*lk]*float64(lk)) // a row keeps n keys: the first n, or n drawn
			for j := range lk {
				if prefix {
					keep[row*lk+j] = j < n
				} else {
					keep[row*lk+j] = j == row%lk || bits[row*lk+j] < 0.4
				}
			}
		}
		mask := frontend.FromSlice(keep, mshape...)
		q := g.Uniform(-2, 2, b, h, lq, d).Cast(dt)
		k := g.Uniform(-2, 2, b, h, lk, d).Cast(dt)
		v := g.Uniform(-1, 1, b, h, lk, d).Cast(dt)
		want := refMaskedAttention(q.Float64s(), k.Float64s(), v.Float64s(), keep, b, h, lq, lk, d, mb, mh, mq, scale)
		macs := 2 * b * h * lq * lk * d
		for _, path := range modelPaths {
			if !pathSelected(path.name) {
				continue
			}
			name, skip := path.backend(path.isHeavy(macs, dt))
			if skip != "" {
				continue
			}
			c, err := frontend.Compile(func(q, k, v, m *frontend.Tensor) *frontend.Tensor {
				return frontend.Attention(q, k, v, frontend.AttentionOptions{Mask: m, Scale: scale})
			}, frontend.Options{Backend: name})
			if err != nil {
				rt.Fatal(err)
			}
			out, err := c.Call(q, k, v, mask)
			if errors.Is(err, frontend.ErrPTXOnly) {
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v", path.name, err)
			}
			closeTo(rt, path.name+": attention", out[0], []int{b, h, lq, d}, want, tolOf(dt))
		}
	})
}

// refMaskedAttention is softmax(q·kᵀ·scale, masked)·v in float64, the
// mask [mb, mh, mq, lk] broadcast over q's [b, h, lq].
func refMaskedAttention(q, k, v []float64, keep []bool, b, h, lq, lk, d, mb, mh, mq int, scale float64) []float64 {
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(d))
	}
	out := make([]float64, b*h*lq*d)
	s := make([]float64, lk)
	for bi := range b {
		for hi := range h {
			for i := range lq {
				row := ((bi%mb)*mh+hi%mh)*mq + i%mq
				m := math.Inf(-1)
				for j := range lk {
					s[j] = math.Inf(-1)
					if keep[row*lk+j] {
						dot := 0.0
						for c := range d {
							dot += q[((bi*h+hi)*lq+i)*d+c] * k[((bi*h+hi)*lk+j)*d+c]
						}
						s[j] = dot * scale
					}
					m = max(m, s[j])
				}
				sum := 0.0
				for j := range lk {
					s[j] = math.Exp(s[j] - m)
					sum += s[j]
				}
				o := out[((bi*h+hi)*lq+i)*d:][:d]
				for j := range lk {
					for c := range d {
						o[c] += s[j] / sum * v[((bi*h+hi)*lk+j)*d+c]
					}
				}
			}
		}
	}
	return out
}
