package nn_test

import (
	"flag"
	"math"
	"os"
	"testing"
)

// TestMain runs few rapid checks per property unless -rapid.checks says
// otherwise: each check compiles a gradient and runs finite differences on
// the interpreter.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set && os.Getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", "6")
	}
	os.Exit(m.Run())
}

// nd is a float64 array in row-major order, the reference side of every
// test.
type nd struct {
	shape []int
	data  []float64
}

func newND(shape ...int) *nd {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &nd{shape: append([]int(nil), shape...), data: make([]float64, n)}
}

func (a *nd) idx(ix ...int) int {
	o := 0
	for i, v := range ix {
		o = o*a.shape[i] + v
	}
	return o
}

func (a *nd) at(ix ...int) float64     { return a.data[a.idx(ix...)] }
func (a *nd) set(v float64, ix ...int) { a.data[a.idx(ix...)] = v }

// refConv2d is a naive NCHW convolution.
func refConv2d(x, w *nd, b []float64, stride, pad, dil, groups int) *nd {
	n, c, h, wd := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	o, cg, kh, kw := w.shape[0], w.shape[1], w.shape[2], w.shape[3]
	oh := (h+2*pad-dil*(kh-1)-1)/stride + 1
	ow := (wd+2*pad-dil*(kw-1)-1)/stride + 1
	y := newND(n, o, oh, ow)
	og := o / groups
	_ = c
	for in := range n {
		for oc := range o {
			g := oc / og
			for i := range oh {
				for j := range ow {
					s := 0.0
					if b != nil {
						s = b[oc]
					}
					for ic := range cg {
						for ki := range kh {
							for kj := range kw {
								hi, wj := i*stride-pad+ki*dil, j*stride-pad+kj*dil
								if hi < 0 || hi >= h || wj < 0 || wj >= wd {
									continue
								}
								s += x.at(in, g*cg+ic, hi, wj) * w.at(oc, ic, ki, kj)
							}
						}
					}
					y.set(s, in, oc, i, j)
				}
			}
		}
	}
	return y
}

// refPoolModes is PyTorch's max_pool2d and avg_pool2d with ceil_mode and
// count_include_pad, written as its CPU kernels compute them: the output
// size rounded up keeps a last window that starts inside the input or its
// left padding; an average divides by the window's extent clipped to the
// padded input (includePad) or to the input.
func refPoolModes(x *nd, k, s, p int, isMax, ceil, includePad bool) *nd {
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	size := func(in int) int {
		num := in + 2*p - k
		if ceil {
			num += s - 1
		}
		o := num/s + 1
		if ceil && (o-1)*s >= in+p {
			o--
		}
		return o
	}
	oh, ow := size(h), size(w)
	y := newND(n, c, oh, ow)
	for a := range n {
		for b := range c {
			for i := range oh {
				for j := range ow {
					h0, w0 := i*s-p, j*s-p
					h1, w1 := min(h0+k, h+p), min(w0+k, w+p)
					poolSize := (h1 - h0) * (w1 - w0)
					h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
					acc := 0.0
					if isMax {
						acc = math.Inf(-1)
					}
					for hi := h0; hi < h1; hi++ {
						for wj := w0; wj < w1; wj++ {
							if isMax {
								acc = math.Max(acc, x.at(a, b, hi, wj))
							} else {
								acc += x.at(a, b, hi, wj)
							}
						}
					}
					if !isMax {
						if includePad {
							acc /= float64(poolSize)
						} else {
							acc /= float64((h1 - h0) * (w1 - w0))
						}
					}
					y.set(acc, a, b, i, j)
				}
			}
		}
	}
	return y
}

// refPool is a naive max (max=true) or average pool with zero (average)
// or -∞ (max) padding, average counting the padding.
func refPool(x *nd, k, stride, pad int, isMax bool) *nd {
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	oh, ow := (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	y := newND(n, c, oh, ow)
	for a := range n {
		for b := range c {
			for i := range oh {
				for j := range ow {
					acc := 0.0
					if isMax {
						acc = math.Inf(-1)
					}
					for ki := range k {
						for kj := range k {
							hi, wj := i*stride-pad+ki, j*stride-pad+kj
							v := 0.0
							if hi >= 0 && hi < h && wj >= 0 && wj < w {
								v = x.at(a, b, hi, wj)
							} else if isMax {
								continue
							}
							if isMax {
								acc = math.Max(acc, v)
							} else {
								acc += v
							}
						}
					}
					if !isMax {
						acc /= float64(k * k)
					}
					y.set(acc, a, b, i, j)
				}
			}
		}
	}
	return y
}

// refAdaptiveAvg is PyTorch's adaptive average pool.
func refAdaptiveAvg(x *nd, oh, ow int) *nd {
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	y := newND(n, c, oh, ow)
	for a := range n {
		for b := range c {
			for i := range oh {
				h0, h1 := i*h/oh, ((i+1)*h+oh-1)/oh
				for j := range ow {
					w0, w1 := j*w/ow, ((j+1)*w+ow-1)/ow
					s := 0.0
					for p := h0; p < h1; p++ {
						for q := w0; q < w1; q++ {
							s += x.at(a, b, p, q)
						}
					}
					y.set(s/float64((h1-h0)*(w1-w0)), a, b, i, j)
				}
			}
		}
	}
	return y
}

// refBatchNormTrain normalizes with batch statistics and returns the new
// running mean and variance (momentum m, unbiased variance).
func refBatchNormTrain(x *nd, w, b, rm, rv []float64, eps, m float64) (*nd, []float64, []float64) {
	n, c, h, wd := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	y := newND(x.shape...)
	cnt := float64(n * h * wd)
	nm, nv := make([]float64, c), make([]float64, c)
	for ch := range c {
		mean, vr := 0.0, 0.0
		for a := range n {
			for i := range h {
				for j := range wd {
					mean += x.at(a, ch, i, j)
				}
			}
		}
		mean /= cnt
		for a := range n {
			for i := range h {
				for j := range wd {
					d := x.at(a, ch, i, j) - mean
					vr += d * d
				}
			}
		}
		vr /= cnt
		for a := range n {
			for i := range h {
				for j := range wd {
					y.set((x.at(a, ch, i, j)-mean)/math.Sqrt(vr+eps)*w[ch]+b[ch], a, ch, i, j)
				}
			}
		}
		nm[ch] = (1-m)*rm[ch] + m*mean
		nv[ch] = (1-m)*rv[ch] + m*vr*cnt/(cnt-1)
	}
	return y, nm, nv
}

// refLayerNorm normalizes rows of x [rows, d].
func refLayerNorm(x []float64, d int, w, b []float64, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x)/d; r++ {
		row := x[r*d : (r+1)*d]
		mean, vr := 0.0, 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(d)
		for _, v := range row {
			vr += (v - mean) * (v - mean)
		}
		vr /= float64(d)
		for i, v := range row {
			y[r*d+i] = (v-mean)/math.Sqrt(vr+eps)*w[i] + b[i]
		}
	}
	return y
}

// refMatmul is x [m, k] · w [k, n] (+ b).
func refMatmul(x []float64, m, k int, w []float64, n int, b []float64) []float64 {
	y := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			if b != nil {
				s = b[j]
			}
			for p := range k {
				s += x[i*k+p] * w[p*n+j]
			}
			y[i*n+j] = s
		}
	}
	return y
}

// refCausalAttention: q, k, v [B, H, T, dh] → [B, H, T, dh].
func refCausalAttention(q, k, v *nd) *nd {
	b, h, t, dh := q.shape[0], q.shape[1], q.shape[2], q.shape[3]
	o := newND(b, h, t, dh)
	sc := 1 / math.Sqrt(float64(dh))
	for a := range b {
		for hh := range h {
			for i := range t {
				s := make([]float64, i+1)
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					d := 0.0
					for e := range dh {
						d += q.at(a, hh, i, e) * k.at(a, hh, j, e)
					}
					s[j] = d * sc
					mx = math.Max(mx, s[j])
				}
				z := 0.0
				for j := range s {
					s[j] = math.Exp(s[j] - mx)
					z += s[j]
				}
				for e := range dh {
					acc := 0.0
					for j := range s {
						acc += s[j] / z * v.at(a, hh, j, e)
					}
					o.set(acc, a, hh, i, e)
				}
			}
		}
	}
	return o
}

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}
