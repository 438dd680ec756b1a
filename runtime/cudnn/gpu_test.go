package cudnn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/strata-ir/strata/runtime/cuda"
)

// TestGPUConv runs each direction of padded, strided and dilated
// convolutions in both layouts on both APIs (the graph API's engines
// without runtime compilation, and the legacy one) on the GPU and checks
// them against sums in float64: operands in {-1, 0, 1} make every product
// and sum exact in f32 and in bf16, so any mix-up of layouts, padding,
// strides, directions or operands shows. On the graph API the
// 16-channel convolution must get an engine plan (the 3-channel one may
// fall back to the legacy API: cuDNN may have no precompiled engine for
// it); which API ran each is logged.
func TestGPUConv(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	t.Logf("cuDNN from %s", hd.Path())
	for _, api := range []string{"graph", "legacy"} {
		if api == "graph" && hd.lib.graph == nil {
			t.Errorf("%s has no graph API", hd.Path())
			continue
		}
		hd.graphAPI = api == "graph"
		for _, shape := range []Conv{
			{N: 2, C: 3, H: 9, W: 8, O: 5, KH: 3, KW: 2, Pad: [2]int64{1, 2}, Stride: [2]int64{2, 1}, Dilate: [2]int64{1, 2}},
			{N: 2, C: 16, H: 7, W: 6, O: 8, KH: 3, KW: 3, Pad: [2]int64{1, 1}, Stride: [2]int64{2, 1}, Dilate: [2]int64{1, 1}},
		} {
			for _, layout := range []Layout{NCHW, NHWC} {
				c := shape
				c.Type, c.Layout = BF16, layout
				checkConv(t, dev, alloc, hd, c, api)
			}
		}
	}
}

// checkConv runs the three directions of c on hd twice each and checks
// them against convLoops.
func checkConv(t *testing.T, dev *cuda.Device, alloc *cuda.Allocator, hd *Handle, c Conv, api string) {
	oh, ow := c.Out()
	xs, ws, ys := [4]int64{c.N, c.C, c.H, c.W}, [4]int64{c.O, c.C, c.KH, c.KW}, [4]int64{c.N, c.O, oh, ow}
	x, w, g := ternary(xs, 1), ternary(ws, 2), ternary(ys, 3)
	y, dx, dw := convLoops(c, x, w, g)
	px, pw, pg := upload(t, dev, alloc, x, xs, c.Layout), upload(t, dev, alloc, w, ws, c.Layout), upload(t, dev, alloc, g, ys, c.Layout)
	for _, d := range []struct {
		dir   Direction
		run   func(out cuda.DevicePtr) error
		want  []float64
		shape [4]int64
	}{
		{DirForward, func(out cuda.DevicePtr) error { return hd.Forward(c, px, pw, out, nil) }, y, ys},
		{DirBackwardData, func(out cuda.DevicePtr) error { return hd.BackwardData(c, pw, pg, out, nil) }, dx, xs},
		{DirBackwardFilter, func(out cuda.DevicePtr) error { return hd.BackwardFilter(c, px, pg, out, nil) }, dw, ws},
	} {
		t.Run(fmt.Sprintf("%s/%s/C%d/layout%d", api, directionNames[d.dir], c.C, c.Layout), func(t *testing.T) {
			// A handle's plans outlive the API switch: start afresh.
			key := planKey{d.dir, c}
			hd.mu.Lock()
			if p := hd.plans[key]; p != nil {
				delete(hd.plans, key)
				_ = dev.WithContext(func() error { return p.destroy(hd.lib) })
			}
			hd.mu.Unlock()
			out := upload(t, dev, alloc, make([]float64, len(d.want)), d.shape, c.Layout)
			for range 2 { // the second call reuses the plan
				if err := d.run(out); err != nil {
					t.Fatal(err)
				}
			}
			got := download(t, dev, out, d.shape, c.Layout)
			for i := range got {
				if got[i] != d.want[i] {
					t.Fatalf("element %d (NCHW order) = %g, want %g", i, got[i], d.want[i])
				}
			}
			p := hd.plans[key]
			graph := p.graph() && !p.failed
			t.Logf("ran %v on the %s API", p.cands[0], map[bool]string{true: "graph", false: "legacy"}[graph])
			if api == "graph" && c.C == 16 && !graph {
				t.Errorf("no graph API plan for %v", c)
			}
			if api == "legacy" && graph {
				t.Errorf("a graph API plan with the graph API off")
			}
		})
	}
}

// convLoops returns the three directions of c in float64 from x, w and
// the output's gradient g (NCHW-ordered), summed over every (n, o, i, j,
// c, a, b).
func convLoops(c Conv, x, w, g []float64) (y, dx, dw []float64) {
	oh, ow := c.Out()
	xs, ws, ys := [4]int64{c.N, c.C, c.H, c.W}, [4]int64{c.O, c.C, c.KH, c.KW}, [4]int64{c.N, c.O, oh, ow}
	y, dx, dw = make([]float64, len(g)), make([]float64, len(x)), make([]float64, len(w))
	for n := range c.N {
		for o := range c.O {
			for i := range oh {
				for j := range ow {
					yi := at(ys, n, o, i, j)
					for ch := range c.C {
						for a := range c.KH {
							for b := range c.KW {
								r, s := i*c.Stride[0]-c.Pad[0]+a*c.Dilate[0], j*c.Stride[1]-c.Pad[1]+b*c.Dilate[1]
								if r < 0 || r >= c.H || s < 0 || s >= c.W {
									continue
								}
								xi, wi := at(xs, n, ch, r, s), at(ws, o, ch, a, b)
								y[yi] += x[xi] * w[wi]
								dx[xi] += g[yi] * w[wi]
								dw[wi] += x[xi] * g[yi]
							}
						}
					}
				}
			}
		}
	}
	return y, dx, dw
}

// ternary returns the elements of an NCHW shape, each in {-1, 0, 1}.
func ternary(shape [4]int64, seed int64) []float64 {
	out := make([]float64, shape[0]*shape[1]*shape[2]*shape[3])
	for i := range out {
		out[i] = float64((int64(i)*7+seed*5)%3 - 1)
	}
	return out
}

// at is the offset of (a, b, c, d) in an NCHW-ordered shape.
func at(s [4]int64, a, b, c, d int64) int64 { return ((a*s[1]+b)*s[2]+c)*s[3] + d }

// stored is the offset in memory of the element at NCHW offset i of
// shape s in layout (NHWC moves dimension 1 last).
func stored(s [4]int64, i int64, layout Layout) int64 {
	if layout == NCHW {
		return i
	}
	d := i % s[3]
	c := i / s[3] % s[2]
	b := i / (s[2] * s[3]) % s[1]
	a := i / (s[1] * s[2] * s[3])
	return ((a*s[2]+c)*s[3]+d)*s[1] + b
}

// upload copies NCHW-ordered values as bf16 to the device in layout.
func upload(t *testing.T, dev *cuda.Device, alloc *cuda.Allocator, vs []float64, s [4]int64, layout Layout) cuda.DevicePtr {
	t.Helper()
	data := make([]byte, 2*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint16(data[2*stored(s, int64(i), layout):], uint16(math.Float32bits(float32(v))>>16))
	}
	p, err := alloc.Alloc(uint64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.CopyHtoD(p, data); err != nil {
		t.Fatal(err)
	}
	return p
}

// download reads a bf16 tensor stored in layout back in NCHW order.
func download(t *testing.T, dev *cuda.Device, p cuda.DevicePtr, s [4]int64, layout Layout) []float64 {
	t.Helper()
	n := s[0] * s[1] * s[2] * s[3]
	data := make([]byte, 2*n)
	if err := dev.CopyDtoH(data, p); err != nil {
		t.Fatal(err)
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*stored(s, int64(i), layout):])) << 16))
	}
	return out
}

// gpuHandle opens GPU 0, loads cuDNN and makes a handle on a caching
// allocator, all released when t ends; it skips t without a GPU or the
// library.
func gpuHandle(t *testing.T) (*cuda.Device, *cuda.Allocator, *Handle) {
	t.Helper()
	dev, err := cuda.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	if err := Load(); err != nil {
		if errors.Is(err, ErrNotFound) {
			t.Skipf("no cuDNN: %v", err)
		}
		t.Fatal(err)
	}
	alloc := cuda.NewAllocator(dev)
	t.Cleanup(func() { alloc.EmptyCache() })
	hd, err := New(dev, alloc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hd.Close(); err != nil {
			t.Error(err)
		}
	})
	return dev, alloc, hd
}

// TestGPUUntimedBesideTune runs each direction of a convolution Untimed
// while a Tune of the same call times its candidates on another stream:
// the untimed calls run the heuristic's first candidate (the plan stays
// unchosen until the Tune ends) and are exact, the Tune leaves one
// chosen candidate, and the calls after it are exact too. The runs are
// marked as the program's work (cuda.Device.BeginWork), which the Tune's
// timings wait for.
func TestGPUUntimedBesideTune(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	c := Conv{Type: BF16, Layout: NHWC, N: 4, C: 16, H: 12, W: 12, O: 32, KH: 3, KW: 3,
		Pad: [2]int64{1, 1}, Stride: [2]int64{1, 1}, Dilate: [2]int64{1, 1}}
	oh, ow := c.Out()
	xs, ws, ys := [4]int64{c.N, c.C, c.H, c.W}, [4]int64{c.O, c.C, c.KH, c.KW}, [4]int64{c.N, c.O, oh, ow}
	x, w, g := ternary(xs, 1), ternary(ws, 2), ternary(ys, 3)
	y, dx, dw := convLoops(c, x, w, g)
	px, pw, pg := upload(t, dev, alloc, x, xs, c.Layout), upload(t, dev, alloc, w, ws, c.Layout), upload(t, dev, alloc, g, ys, c.Layout)
	st, err := dev.NewNonBlockingStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	for _, d := range []struct {
		dir   Direction
		ops   func(out cuda.DevicePtr) Operands
		want  []float64
		shape [4]int64
	}{
		{DirForward, func(out cuda.DevicePtr) Operands { return Operands{X: px, W: pw, Y: out} }, y, ys},
		{DirBackwardData, func(out cuda.DevicePtr) Operands { return Operands{X: out, W: pw, Y: pg} }, dx, xs},
		{DirBackwardFilter, func(out cuda.DevicePtr) Operands { return Operands{X: px, W: out, Y: pg} }, dw, ws},
	} {
		t.Run(directionNames[d.dir], func(t *testing.T) {
			out := upload(t, dev, alloc, make([]float64, len(d.want)), d.shape, c.Layout)
			scratch := upload(t, dev, alloc, make([]float64, len(d.want)), d.shape, c.Layout)
			check := func(when string) {
				t.Helper()
				got := download(t, dev, out, d.shape, c.Layout)
				for i := range got {
					if got[i] != d.want[i] {
						t.Fatalf("%s: element %d (NCHW order) = %g, want %g", when, i, got[i], d.want[i])
					}
				}
			}
			// Plan makes the plan, unchosen, and runs nothing; the first
			// untimed call finds it and leaves it unchosen.
			if err := hd.Plan(d.dir, c); err != nil {
				t.Fatal(err)
			}
			hd.mu.Lock()
			p := hd.plans[planKey{d.dir, c}]
			hd.mu.Unlock()
			if p == nil || len(p.cands) == 0 || p.chosen && len(p.cands) > 1 {
				t.Fatalf("after Plan: plan %+v, want one with unchosen candidates", p)
			}
			if err := hd.Untimed(d.dir, c, d.ops(out), nil); err != nil {
				t.Fatal(err)
			}
			check("untimed")
			if hd.plans[planKey{d.dir, c}] != p {
				t.Fatal("the untimed call made another plan")
			}
			if n := len(p.cands); p.chosen && n > 1 {
				t.Fatalf("an untimed call chose among %d candidates", n)
			}
			t.Logf("%d candidates", len(p.cands))
			tuned := make(chan error, 1)
			go func() { tuned <- hd.Tune(d.dir, c, d.ops(scratch), st) }()
			for i := 0; ; i++ {
				select {
				case err := <-tuned:
					if err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("after %d untimed calls beside the Tune", i))
					hd.mu.Lock()
					chosen, n := p.chosen, len(p.cands)
					hd.mu.Unlock()
					if !chosen || n != 1 {
						t.Fatalf("after the Tune: chosen %v among %d candidates, want one chosen", chosen, n)
					}
					if err := hd.Untimed(d.dir, c, d.ops(out), nil); err != nil {
						t.Fatal(err)
					}
					check("after the Tune")
					return
				default:
				}
				dev.BeginWork()
				err := hd.Untimed(d.dir, c, d.ops(out), nil)
				if endErr := dev.EndWork(nil); err == nil {
					err = endErr
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := dev.Synchronize(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestGPUTuneWorkspace: every call of a Tune is on the tuning workspace
// (its timed candidates, and the one run of a call chosen already), and
// the program's calls (timed, Untimed) on the handle's. A warm-up's Tune
// runs on a stream of its own beside the program's calls: on the
// handle's workspace, their kernels could overwrite each other's partial
// results.
func TestGPUTuneWorkspace(t *testing.T) {
	dev, alloc, hd := gpuHandle(t)
	var used []cuda.DevicePtr
	l := *hd.lib
	fwd := l.cudnnConvolutionForward
	l.cudnnConvolutionForward = func(h uintptr, alpha unsafe.Pointer, xd uintptr, x uint64, wd uintptr, w uint64, conv uintptr, algo int32,
		ws, wsBytes uint64, beta unsafe.Pointer, yd uintptr, y uint64) Status {
		used = append(used, cuda.DevicePtr(ws))
		return fwd(h, alpha, xd, x, wd, w, conv, algo, ws, wsBytes, beta, yd, y)
	}
	if l.graph != nil {
		g := *l.graph
		set := g.set
		g.set = func(d uintptr, name, typ int32, n int64, elems unsafe.Pointer) Status {
			if name == attrPackWorkspace {
				used = append(used, cuda.DevicePtr(*(*uintptr)(elems)))
			}
			return set(d, name, typ, n, elems)
		}
		l.graph = &g
	}
	hd.lib = &l
	c := Conv{Type: BF16, Layout: NHWC, N: 4, C: 16, H: 12, W: 12, O: 32, KH: 3, KW: 3,
		Pad: [2]int64{1, 1}, Stride: [2]int64{1, 1}, Dilate: [2]int64{1, 1}}
	oh, ow := c.Out()
	xs, ws, ys := [4]int64{c.N, c.C, c.H, c.W}, [4]int64{c.O, c.C, c.KH, c.KW}, [4]int64{c.N, c.O, oh, ow}
	px, pw := upload(t, dev, alloc, ternary(xs, 1), xs, c.Layout), upload(t, dev, alloc, ternary(ws, 2), ws, c.Layout)
	py := upload(t, dev, alloc, make([]float64, ys[0]*ys[1]*ys[2]*ys[3]), ys, c.Layout)
	st, err := dev.NewNonBlockingStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	ops := Operands{X: px, W: pw, Y: py}
	// want names the workspace after the call: the first Tune takes the
	// tuning one.
	handles := func() cuda.DevicePtr { return hd.workspace }
	tuning := func() cuda.DevicePtr { return hd.tuneWorkspace }
	expect := func(what string, want func() cuda.DevicePtr, call func() error) {
		t.Helper()
		used = used[:0]
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := dev.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if len(used) == 0 {
			t.Fatalf("%s made no call", what)
		}
		for i, ws := range used {
			if ws != want() || want() == 0 {
				t.Errorf("%s: call %d on workspace %#x, want %#x (handle's %#x, tuning %#x)",
					what, i, uint64(ws), uint64(want()), uint64(hd.workspace), uint64(hd.tuneWorkspace))
			}
		}
	}
	expect("an untimed call", handles, func() error { return hd.Untimed(DirForward, c, ops, nil) })
	expect("a Tune with candidates to time", tuning, func() error { return hd.Tune(DirForward, c, ops, st) })
	expect("a timed call after the Tune", handles, func() error { return hd.Forward(c, px, pw, py, nil) })
	expect("a Tune of a chosen call", tuning, func() error { return hd.Tune(DirForward, c, ops, st) })
}
