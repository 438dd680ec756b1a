package cudnn

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/runtime/cuda"
)

// TestSearchMissing checks that a search finding nothing is ErrNotFound
// and says what it tried.
func TestSearchMissing(t *testing.T) {
	_, err := search([]string{"libstrata-no-such-cudnn.so.9"})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v, want an error wrapping ErrNotFound", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "cuDNN not found: tried $STRATA_CUDNN, 1 paths: libstrata-no-such-cudnn.so.9: ") {
		t.Errorf("unclear message %q", msg)
	}
}

// TestFindOff checks that $STRATA_CUDNN=off turns the library off
// without a search: ErrNotFound, saying why.
func TestFindOff(t *testing.T) {
	_, err := find(Off)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "disabled by $STRATA_CUDNN=off") {
		t.Fatalf("got %v, want ErrNotFound saying $STRATA_CUDNN=off disabled it", err)
	}
}

// TestSearchNotCuDNN checks that a library without cuDNN's entry points
// is refused cleanly (not by a panic while binding), and that the search
// goes on to the next candidate.
func TestSearchNotCuDNN(t *testing.T) {
	_, err := search([]string{"libc.so.6", "libstrata-no-such-cudnn.so.9"})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "libc.so.6 has no cudnnGetVersion") ||
		!strings.Contains(err.Error(), "libstrata-no-such-cudnn.so.9") {
		t.Fatalf("got %v, want ErrNotFound naming libc's missing cudnnGetVersion and the second path", err)
	}
}

// TestCandidates checks the search order: $STRATA_CUDNN first, then the
// soname.
func TestCandidates(t *testing.T) {
	t.Setenv(EnvPath, "/opt/x/libcudnn.so.9")
	c := candidates()
	if len(c) < 2 || c[0] != "/opt/x/libcudnn.so.9" || c[1] != "libcudnn.so.9" {
		t.Errorf("candidates() = %q", c)
	}
}

// TestConvOut checks the output sizes against PyTorch's formula on
// ResNet-50's stem and a dilated, padded window.
func TestConvOut(t *testing.T) {
	for _, tc := range []struct {
		c      Conv
		oh, ow int64
	}{
		{Conv{H: 224, W: 224, KH: 7, KW: 7, Pad: [2]int64{3, 3}, Stride: [2]int64{2, 2}, Dilate: [2]int64{1, 1}}, 112, 112},
		{Conv{H: 10, W: 9, KH: 3, KW: 2, Pad: [2]int64{2, 0}, Stride: [2]int64{1, 3}, Dilate: [2]int64{2, 1}}, 10, 3},
	} {
		if oh, ow := tc.c.Out(); oh != tc.oh || ow != tc.ow {
			t.Errorf("%v: Out() = %d×%d, want %d×%d", tc.c, oh, ow, tc.oh, tc.ow)
		}
	}
}

// TestConvCheck checks the convolutions the handle refuses before calling
// the library.
func TestConvCheck(t *testing.T) {
	ok := Conv{Type: BF16, Layout: NHWC, N: 2, C: 3, H: 8, W: 8, O: 4, KH: 3, KW: 3, Pad: [2]int64{1, 1}, Stride: [2]int64{1, 1}, Dilate: [2]int64{1, 1}}
	if err := ok.check(); err != nil {
		t.Fatalf("%v: %v", ok, err)
	}
	for _, tc := range []struct {
		m    func(*Conv)
		want string
	}{
		{func(c *Conv) { c.Type = 0 }, "tensors must be bf16 or f16"},
		{func(c *Conv) { c.Layout = 5 }, "unknown layout 5"},
		{func(c *Conv) { c.Stride[1] = 0 }, "must be positive"},
		{func(c *Conv) { c.KH = 11 }, "the output's 0×8, must be positive"},
		{func(c *Conv) { c.N = 1 << 31 }, "sizes must fit in 32 bits"},
	} {
		c := ok
		tc.m(&c)
		if err := c.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", c, err, tc.want)
		}
	}
}

// TestStatusNames checks the names of statuses the library cannot be
// asked about.
func TestStatusNames(t *testing.T) {
	if got := Status(3000).String(); got != "CUDNN_STATUS_NOT_SUPPORTED" {
		t.Errorf("Status(3000) = %q", got)
	}
	if got := Status(99).String(); got != "cudnnStatus_t(99)" {
		t.Errorf("Status(99) = %q", got)
	}
	e := &Error{Op: "cudnnConvolutionForward", Status: 2000, Name: "CUDNN_STATUS_BAD_PARAM"}
	if got := e.Error(); got != "cuDNN: cudnnConvolutionForward failed: CUDNN_STATUS_BAD_PARAM" {
		t.Errorf("Error() = %q", got)
	}
}

// TestConvAt checks the sampled reference of TestGPUConvTiming (one
// element at a time, each direction) against the loops over every term
// that TestGPUConv checks whole results with, on a strided, padded and
// dilated convolution.
func TestConvAt(t *testing.T) {
	for _, c := range []Conv{
		{N: 2, C: 3, H: 9, W: 8, O: 5, KH: 3, KW: 2, Pad: [2]int64{1, 2}, Stride: [2]int64{2, 1}, Dilate: [2]int64{1, 2}},
		{N: 1, C: 2, H: 11, W: 7, O: 3, KH: 7, KW: 3, Pad: [2]int64{3, 1}, Stride: [2]int64{2, 3}, Dilate: [2]int64{1, 1}},
	} {
		oh, ow := c.Out()
		xs, ws, ys := [4]int64{c.N, c.C, c.H, c.W}, [4]int64{c.O, c.C, c.KH, c.KW}, [4]int64{c.N, c.O, oh, ow}
		rng := rand.New(rand.NewPCG(1, 2))
		x, w, g := randomBF16(rng, xs), randomBF16(rng, ws), randomBF16(rng, ys)
		y, dx, dw := convLoops(c, x, w, g)
		for _, d := range []struct {
			dir   Direction
			want  []float64
			shape [4]int64
		}{{DirForward, y, ys}, {DirBackwardData, dx, xs}, {DirBackwardFilter, dw, ws}} {
			s := d.shape
			for i := range d.want {
				idx := [4]int64{int64(i) / (s[1] * s[2] * s[3]), int64(i) / (s[2] * s[3]) % s[1], int64(i) / s[3] % s[2], int64(i) % s[3]}
				if got := convAt(c, x, w, g, idx, d.dir); math.Abs(got-d.want[i]) > 1e-9 {
					t.Fatalf("%v %s: element %v = %g, want %g", c, directionNames[d.dir], idx, got, d.want[i])
				}
			}
		}
	}
}

// TestStored checks the NHWC offsets the GPU tests lay tensors out with.
func TestStored(t *testing.T) {
	s := [4]int64{2, 3, 4, 5}
	if got := stored(s, at(s, 1, 2, 3, 4), NHWC); got != ((1*4+3)*5+4)*3+2 {
		t.Errorf("NHWC offset of (1, 2, 3, 4) in %v = %d", s, got)
	}
	if got := stored(s, at(s, 1, 2, 3, 4), NCHW); got != at(s, 1, 2, 3, 4) {
		t.Errorf("NCHW offset of (1, 2, 3, 4) in %v = %d", s, got)
	}
}

// TestStrides checks the graph API's tensor strides against the offsets
// the GPU tests lay tensors out with, in both layouts.
func TestStrides(t *testing.T) {
	s := [4]int64{2, 3, 4, 5}
	for _, layout := range []Layout{NCHW, NHWC} {
		st := strides(layout, s)
		for i := range s[0] * s[1] * s[2] * s[3] {
			idx := [4]int64{i / (s[1] * s[2] * s[3]), i / (s[2] * s[3]) % s[1], i / s[3] % s[2], i % s[3]}
			off := idx[0]*st[0] + idx[1]*st[1] + idx[2]*st[2] + idx[3]*st[3]
			if want := stored(s, i, layout); off != want {
				t.Fatalf("layout %d: element %v at %d by strides %v, want %d", layout, idx, off, st, want)
			}
		}
	}
}

// TestUseGraphAPI checks $STRATA_CUDNN_API: the graph API by default, the
// legacy one when asked, and an unknown value refused by name.
func TestUseGraphAPI(t *testing.T) {
	for _, tc := range []struct {
		env   string
		graph bool
		err   string
	}{{"", true, ""}, {"graph", true, ""}, {"legacy", false, ""}, {"v7", true, `$STRATA_CUDNN_API="v7": want graph or legacy`}} {
		t.Setenv(APIEnv, tc.env)
		graph, err := useGraphAPI()
		if graph != tc.graph || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s=%q: got %v, %v; want %v, %q", APIEnv, tc.env, graph, err, tc.graph, tc.err)
		}
	}
}

// TestCandidateNames checks how the logs name a plan's candidates and
// which operands a graph API plan takes as aligned.
func TestCandidateNames(t *testing.T) {
	if got := (candidate{exec: 1, engine: 12}).String(); got != "engine 12" {
		t.Errorf("graph API candidate: %q", got)
	}
	if got := (candidate{algo: 3}).String(); got != "algorithm 3" {
		t.Errorf("legacy candidate: %q", got)
	}
	if !aligned([3]cuda.DevicePtr{0x1000, 0x2010, 0x30}) || aligned([3]cuda.DevicePtr{0x1000, 0x2002, 0x30}) {
		t.Error("aligned: want true for 16-byte multiples only")
	}
}

// TestBuilderInt64sNone checks that an attribute set to no values is the
// builder's error, not an index panic (no library needed: the builder
// stops before calling it).
func TestBuilderInt64sNone(t *testing.T) {
	b := &builder{}
	b.int64s(0, attrConvDilations)
	if b.err == nil || !strings.Contains(b.err.Error(), "no values") {
		t.Errorf("err = %v, want an attribute of no values refused", b.err)
	}
}
