package cudnn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/cuda"
)

// resnetConvs are ResNet-50's convolutions at batch 64: in channels,
// size, out channels, window, stride, padding.
var resnetConvs = []struct {
	name             string
	c, h, o, k, s, p int64
}{
	{"stem", 3, 224, 64, 7, 2, 3},
	// The stem with its input channels padded with zeros, as
	// graph-channels-last pads them (pad-channels).
	{"stem-c4", 4, 224, 64, 7, 2, 3},
	{"stem-c8", 8, 224, 64, 7, 2, 3},
	// The stem as graph-channels-last computes it (space-to-depth): the
	// input's 2×2 blocks of 3-channel pixels as 12 channels, padded to 16
	// (and not), a 4×4 window, no stride or padding.
	{"stem-s2d", 16, 115, 64, 4, 1, 0},
	{"stem-s2d-c12", 12, 115, 64, 4, 1, 0},
	{"layer1-3x3", 64, 56, 64, 3, 1, 1},
	{"layer2-3x3-s2", 128, 56, 128, 3, 2, 1},
	{"layer3-3x3", 256, 14, 256, 3, 1, 1},
	{"layer4-3x3", 512, 7, 512, 3, 1, 1},
	{"layer1-1x1", 256, 56, 64, 1, 1, 0},
	{"downsample-1x1-s2", 512, 28, 1024, 1, 2, 0},
}

// TestGPUConvTiming times each direction of ResNet-50's convolutions in
// both layouts, after checking 64 sampled elements of each result against
// sums in float64 on random bf16 data, and logs ms and TFLOP/s: what
// cuDNN gives Strata's library convolutions, and what a channels-last
// layout would gain.
func TestGPUConvTiming(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	for _, s := range resnetConvs {
		c := Conv{Type: BF16, N: 64, C: s.c, H: s.h, W: s.h, O: s.o, KH: s.k, KW: s.k,
			Pad: [2]int64{s.p, s.p}, Stride: [2]int64{s.s, s.s}, Dilate: [2]int64{1, 1}}
		oh, ow := c.Out()
		xs, ws, ys := [4]int64{c.N, c.C, c.H, c.W}, [4]int64{c.O, c.C, c.KH, c.KW}, [4]int64{c.N, c.O, oh, ow}
		x, w, g := randomBF16(rng, xs), randomBF16(rng, ws), randomBF16(rng, ys)
		flops := 2 * float64(c.N*c.O*oh*ow) * float64(c.C*c.KH*c.KW)
		var line strings.Builder
		for _, layout := range []Layout{NCHW, NHWC} {
			c.Layout = layout
			px, pw, pg := upload(t, dev, alloc, x, xs, layout), upload(t, dev, alloc, w, ws, layout), upload(t, dev, alloc, g, ys, layout)
			for _, d := range []struct {
				name  string
				run   func(out cuda.DevicePtr) error
				shape [4]int64
				want  func(i [4]int64) float64
				terms int64 // summed per element (at most)
			}{
				{"fwd", func(out cuda.DevicePtr) error { return hd.Forward(c, px, pw, out, nil) }, ys,
					func(i [4]int64) float64 { return convAt(c, x, w, g, i, DirForward) }, c.C * c.KH * c.KW},
				{"bwd-data", func(out cuda.DevicePtr) error { return hd.BackwardData(c, pw, pg, out, nil) }, xs,
					func(i [4]int64) float64 { return convAt(c, x, w, g, i, DirBackwardData) }, c.O * c.KH * c.KW},
				{"bwd-filter", func(out cuda.DevicePtr) error { return hd.BackwardFilter(c, px, pg, out, nil) }, ws,
					func(i [4]int64) float64 { return convAt(c, x, w, g, i, DirBackwardFilter) }, c.N * oh * ow},
			} {
				n := d.shape[0] * d.shape[1] * d.shape[2] * d.shape[3]
				out, err := alloc.Alloc(uint64(2 * n))
				if err != nil {
					t.Fatal(err)
				}
				if err := d.run(out); err != nil {
					t.Fatalf("%s %s %v: %v", s.name, d.name, layout, err)
				}
				got := download(t, dev, out, d.shape, layout)
				for range 64 {
					var i [4]int64
					for k := range i {
						i[k] = rng.Int64N(d.shape[k])
					}
					// A sum of n products of values uniform in [-1, 1) has a
					// standard deviation of √n/3; cuDNN's split reductions
					// round partial sums (measured: 4.7 bf16 ulps on a
					// 200 704-term filter gradient), so the tolerance is 1/64
					// of the element's magnitude plus that scale.
					want, at := d.want(i), at(d.shape, i[0], i[1], i[2], i[3])
					if math.Abs(got[at]-want) > (math.Abs(want)+math.Sqrt(float64(d.terms))/3)/64 {
						t.Fatalf("%s %s layout %d: element %v = %g, want %g", s.name, d.name, layout, i, got[at], want)
					}
				}
				ms := timeIt(t, dev, func() error { return d.run(out) })
				fmt.Fprintf(&line, " %s/%s %.4f ms (%.0f TFLOP/s);", d.name, [...]string{"nchw", "nhwc"}[layout], ms, flops/ms/1e9)
				if err := alloc.Free(out); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []cuda.DevicePtr{px, pw, pg} {
				if err := alloc.Free(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("cudnn %s:%s", s.name, line.String())
	}
}

// randomBF16 returns values of an NCHW shape uniform in [-1, 1), each
// exactly a bf16.
func randomBF16(rng *rand.Rand, s [4]int64) []float64 {
	out := make([]float64, s[0]*s[1]*s[2]*s[3])
	for i := range out {
		out[i] = float64(math.Float32frombits(math.Float32bits(float32(2*rng.Float64()-1)) &^ 0xffff))
	}
	return out
}

// convAt is one element (NCHW index i) of direction dir of c in float64,
// from x, w and the output's gradient g, all NCHW-ordered.
func convAt(c Conv, x, w, g []float64, i [4]int64, dir Direction) float64 {
	oh, ow := c.Out()
	xs, ws, ys := [4]int64{c.N, c.C, c.H, c.W}, [4]int64{c.O, c.C, c.KH, c.KW}, [4]int64{c.N, c.O, oh, ow}
	sum := 0.0
	// term adds x[n,ch,r,q]·(w or g) for one (n, o, oi, oj, ch, a, b).
	term := func(n, o, oi, oj, ch, a, b int64) {
		r, q := oi*c.Stride[0]-c.Pad[0]+a*c.Dilate[0], oj*c.Stride[1]-c.Pad[1]+b*c.Dilate[1]
		if oi < 0 || oi >= oh || oj < 0 || oj >= ow || r < 0 || r >= c.H || q < 0 || q >= c.W {
			return
		}
		switch dir {
		case DirForward:
			sum += x[at(xs, n, ch, r, q)] * w[at(ws, o, ch, a, b)]
		case DirBackwardData:
			sum += g[at(ys, n, o, oi, oj)] * w[at(ws, o, ch, a, b)]
		case DirBackwardFilter:
			sum += x[at(xs, n, ch, r, q)] * g[at(ys, n, o, oi, oj)]
		}
	}
	switch dir {
	case DirForward: // i = (n, o, oi, oj)
		for ch := range c.C {
			for a := range c.KH {
				for b := range c.KW {
					term(i[0], i[1], i[2], i[3], ch, a, b)
				}
			}
		}
	case DirBackwardData: // i = (n, ch, r, q): the outputs whose window holds it
		for o := range c.O {
			for a := range c.KH {
				for b := range c.KW {
					ri, qi := i[2]+c.Pad[0]-a*c.Dilate[0], i[3]+c.Pad[1]-b*c.Dilate[1]
					if ri%c.Stride[0] == 0 && qi%c.Stride[1] == 0 && ri >= 0 && qi >= 0 {
						term(i[0], o, ri/c.Stride[0], qi/c.Stride[1], i[1], a, b)
					}
				}
			}
		}
	case DirBackwardFilter: // i = (o, ch, a, b)
		for n := range c.N {
			for oi := range oh {
				for oj := range ow {
					term(n, i[0], oi, oj, i[1], i[2], i[3])
				}
			}
		}
	}
	return sum
}

// timeIt returns the median of 20 event-timed runs of f on the default
// stream after 3 warm-ups.
func timeIt(t *testing.T, dev *cuda.Device, f func() error) float64 {
	t.Helper()
	start, end := must(dev.NewEvent())(t), must(dev.NewEvent())(t)
	defer start.Destroy()
	defer end.Destroy()
	var ms []float64
	for i := range 23 {
		if err := start.Record(nil); err != nil {
			t.Fatal(err)
		}
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if err := end.Record(nil); err != nil {
			t.Fatal(err)
		}
		if err := end.Synchronize(); err != nil {
			t.Fatal(err)
		}
		e, err := cuda.Elapsed(start, end)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 3 {
			ms = append(ms, float64(e))
		}
	}
	sort.Float64s(ms)
	return ms[len(ms)/2]
}

// must returns a function that fails t on err and otherwise returns v.
func must[V any](v V, err error) func(*testing.T) V {
	return func(t *testing.T) V {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
