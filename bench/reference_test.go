package bench

import (
	"fmt"
	"math"
)

// references compute each workload in float64 from its inputs (flattened,
// row-major), one slice per output: the tests' oracle at the small size.
var references = map[string]func(d []int64, in [][]float64) [][]float64{
	"pointwise": func(d []int64, in [][]float64) [][]float64 {
		x, a, b := in[0], in[1], in[2]
		y := make([]float64, len(x))
		for i := range x {
			y[i] = math.Max(x[i]*a[i]+b[i], 0) / (1 + math.Exp(-x[i]))
		}
		return [][]float64{y}
	},
	"softmax": func(d []int64, in [][]float64) [][]float64 {
		return [][]float64{softmaxRows(in[0], int(d[1]))}
	},
	"layernorm": func(d []int64, in [][]float64) [][]float64 {
		x, w, b := in[0], in[1], in[2]
		c := int(d[1])
		y := make([]float64, len(x))
		for r := 0; r < len(x); r += c {
			row := x[r : r+c]
			mean, vr := 0.0, 0.0
			for _, v := range row {
				mean += v
			}
			mean /= float64(c)
			for _, v := range row {
				vr += (v - mean) * (v - mean)
			}
			inv := 1 / math.Sqrt(vr/float64(c)+1e-5)
			for j, v := range row {
				y[r+j] = (v-mean)*inv*w[j] + b[j]
			}
		}
		return [][]float64{y}
	},
	"rowsum": func(d []int64, in [][]float64) [][]float64 {
		c := int(d[1])
		y := make([]float64, int(d[0]))
		for i, v := range in[0] {
			y[i/c] += v
		}
		return [][]float64{y}
	},
	"mm_bias_gelu": func(d []int64, in [][]float64) [][]float64 {
		m, k, n := int(d[0]), int(d[1]), int(d[2])
		y := matmul(in[0], in[1], m, k, n)
		for i := range y {
			y[i] = geluTanh(y[i] + in[2][i%n])
		}
		return [][]float64{y}
	},
	"gemm_own_bf16": func(d []int64, in [][]float64) [][]float64 {
		return [][]float64{matmul(in[0], in[1], int(d[0]), int(d[1]), int(d[2]))}
	},
	"attention":             attentionReference(false),
	"attention_d128":        attentionReference(false),
	"attention_causal":      attentionReference(true),
	"attention_causal_d128": attentionReference(true),
	"attention_train":       attentionTrainReference,
	"attention_train_d128":  attentionTrainReference,
	"tiny_chain": func(d []int64, in [][]float64) [][]float64 {
		y := append([]float64(nil), in[0]...)
		for i := range y {
			for range 10 {
				y[i] = math.Sin(y[i])*1.01 + 0.1
			}
		}
		return [][]float64{y}
	},
	"mlp_train": func(d []int64, in [][]float64) [][]float64 {
		m, k, h := int(d[0]), int(d[1]), int(d[2])
		x, w1, w2 := in[0], in[1], in[2]
		pre := matmul(x, w1, m, k, h)
		act := make([]float64, len(pre))
		for i, v := range pre {
			act[i] = geluTanh(v)
		}
		y := matmul(act, w2, m, h, k)
		dy := make([]float64, len(y))
		for i, v := range y {
			dy[i] = 2 * v / float64(len(y))
		}
		g2 := matmul(transpose(act, m, h), dy, h, m, k)
		dh := matmul(dy, transpose(w2, h, k), m, k, h)
		for i := range dh {
			dh[i] *= geluTanhGrad(pre[i])
		}
		g1 := matmul(transpose(x, m, k), dh, k, m, h)
		return [][]float64{g1, g2}
	},
	"conv3x3_bn_relu": convBNReLU,
	"conv1x1_bn_relu": convBNReLU,
}

// convBNReLU is relu(conv(x, w)·s + t) with stride 1 and padding k/2, by
// the definition: out-of-image taps add nothing.
func convBNReLU(d []int64, in [][]float64) [][]float64 {
	n, c, h, o, k := int(d[0]), int(d[1]), int(d[2]), int(d[3]), int(d[4])
	x, w, s, t := in[0], in[1], in[2], in[3]
	y := make([]float64, n*o*h*h)
	for b := range n {
		for oc := range o {
			for i := range h {
				for j := range h {
					sum := 0.0
					for ic := range c {
						for u := range k {
							for v := range k {
								r, q := i+u-k/2, j+v-k/2
								if r >= 0 && r < h && q >= 0 && q < h {
									sum += x[((b*c+ic)*h+r)*h+q] * w[((oc*c+ic)*k+u)*k+v]
								}
							}
						}
					}
					y[((b*o+oc)*h+i)*h+j] = math.Max(sum*s[oc]+t[oc], 0)
				}
			}
		}
	}
	return [][]float64{y}
}

// attentionReference is softmax(q·kᵀ/√d)·v per batch and head, with
// key j masked for query i > j when causal.
func attentionReference(causal bool) func(d []int64, in [][]float64) [][]float64 {
	return func(d []int64, in [][]float64) [][]float64 {
		bh, s, dh := int(d[0]*d[1]), int(d[2]), int(d[3])
		o := make([]float64, 0, bh*s*dh)
		for i := range bh {
			q, k, v := in[0][i*s*dh:(i+1)*s*dh], in[1][i*s*dh:(i+1)*s*dh], in[2][i*s*dh:(i+1)*s*dh]
			sc := matmul(q, transpose(k, s, dh), s, dh, s)
			for j := range sc {
				sc[j] /= math.Sqrt(float64(dh))
				if causal && j%s > j/s {
					sc[j] = math.Inf(-1)
				}
			}
			o = append(o, matmul(softmaxRows(sc, s), v, s, s, dh)...)
		}
		return [][]float64{o}
	}
}

// attentionTrainReference differentiates Σ causal_attention(q, k, v)·w
// with respect to q, k and v (inputs w, q, k, v): with P the
// probabilities, dv = Pᵀ·w, dS = P·(w·vᵀ − rowsum(P·(w·vᵀ))), dq =
// dS·k/√d, dk = dSᵀ·q/√d.
func attentionTrainReference(d []int64, in [][]float64) [][]float64 {
	bh, s, dh := int(d[0]*d[1]), int(d[2]), int(d[3])
	scale := 1 / math.Sqrt(float64(dh))
	var gq, gk, gv []float64
	for i := range bh {
		part := func(x []float64) []float64 { return x[i*s*dh : (i+1)*s*dh] }
		w, q, k, v := part(in[0]), part(in[1]), part(in[2]), part(in[3])
		sc := matmul(q, transpose(k, s, dh), s, dh, s)
		for j := range sc {
			sc[j] *= scale
			if j%s > j/s {
				sc[j] = math.Inf(-1)
			}
		}
		p := softmaxRows(sc, s)
		gv = append(gv, matmul(transpose(p, s, s), w, s, s, dh)...)
		dp := matmul(w, transpose(v, s, dh), s, dh, s)
		for r := range s {
			sum := 0.0
			for c := range s {
				sum += dp[r*s+c] * p[r*s+c]
			}
			for c := range s {
				dp[r*s+c] = p[r*s+c] * (dp[r*s+c] - sum) * scale
			}
		}
		gq = append(gq, matmul(dp, k, s, s, dh)...)
		gk = append(gk, matmul(transpose(dp, s, s), q, s, s, dh)...)
	}
	return [][]float64{gq, gk, gv}
}

// referenceOutputs runs the reference of w on every variant of in.
func referenceOutputs(w *Workload, inst *Instance, inputs [][][]float64) ([][][]float64, error) {
	ref, ok := references[w.Name]
	if w.Name == "softmax_dynamic" {
		ref, ok = references["softmax"], true
	}
	if !ok {
		return nil, fmt.Errorf("no reference for %s", w.Name)
	}
	out := make([][][]float64, len(inst.Variants))
	for vi, v := range inst.Variants {
		d := w.Small
		if w.Name == "softmax_dynamic" {
			d = v.Inputs[0].Shape
		}
		out[vi] = ref(d, inputs[vi])
	}
	return out, nil
}

func softmaxRows(x []float64, c int) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x); r += c {
		mx := math.Inf(-1)
		for _, v := range x[r : r+c] {
			mx = math.Max(mx, v)
		}
		sum := 0.0
		for j, v := range x[r : r+c] {
			y[r+j] = math.Exp(v - mx)
			sum += y[r+j]
		}
		for j := range c {
			y[r+j] /= sum
		}
	}
	return y
}

func matmul(a, b []float64, m, k, n int) []float64 {
	c := make([]float64, m*n)
	for i := range m {
		for p := range k {
			for j := range n {
				c[i*n+j] += a[i*k+p] * b[p*n+j]
			}
		}
	}
	return c
}

func transpose(a []float64, r, c int) []float64 {
	t := make([]float64, len(a))
	for i := range r {
		for j := range c {
			t[j*r+i] = a[i*c+j]
		}
	}
	return t
}

const geluC = 0.7978845608028654 // √(2/π)

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(geluC*(x+0.044715*x*x*x)))
}

func geluTanhGrad(x float64) float64 {
	u := geluC * (x + 0.044715*x*x*x)
	t := math.Tanh(u)
	return 0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*0.044715*x*x)
}
