package interp_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestLibraryConv2DDirections checks gpu.library_conv2d's three
// directions against each other through the adjoint identities of a
// strided, padded and dilated convolution, ⟨conv(x, w), g⟩ = ⟨x, dx(g,
// w)⟩ = ⟨w, dw(x, g)⟩, on small integers (every sum exact in f32 and in
// bf16), and the forward against a sum written out here.
func TestLibraryConv2DDirections(t *testing.T) {
	const geo = `strides = array<i64: 2, 1>, padding = array<i64: 1, 2>, dilations = array<i64: 1, 2>`
	xs, ws, ys := []int64{2, 3, 5, 4}, []int64{2, 3, 3, 2}, []int64{2, 2, 3, 6}
	typ := func(s []int64) string { return fmt.Sprintf("memref<%dx%dx%dx%dxbf16>", s[0], s[1], s[2], s[3]) }
	src := ""
	for _, dir := range []string{"forward", "backward_data", "backward_filter"} {
		src += fmt.Sprintf("func.func @%s(%%x: %s, %%w: %s, %%y: %s) {\n  \"gpu.library_conv2d\"(%%x, %%w, %%y) <{%s, direction = %q}> : (%s, %s, %s) -> ()\n  return\n}\n",
			dir, typ(xs), typ(ws), typ(ys), geo, dir, typ(xs), typ(ws), typ(ys))
	}
	m, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{})
	if err == nil {
		err = ir.Verify(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	vals := func(s []int64, seed int) []float64 {
		out := make([]float64, s[0]*s[1]*s[2]*s[3])
		for i := range out {
			out[i] = float64((i*7+seed*3)%5 - 2)
		}
		return out
	}
	buf := func(s []int64, v []float64) *interp.Buffer {
		tv, err := interp.FromFloat64s(ir.BF16, s, v)
		if err != nil {
			t.Fatal(err)
		}
		return interp.BufferFromTensor(tv)
	}
	x, w, g := vals(xs, 1), vals(ws, 2), vals(ys, 3)
	// run calls a direction with x, w and y and returns the written one.
	run := func(dir string, written int) []float64 {
		args := []*interp.Buffer{buf(xs, x), buf(ws, w), buf(ys, g)}
		if _, err := interp.New(m).Call(dir, args[0], args[1], args[2]); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		tv, err := args[written].Tensor()
		if err != nil {
			t.Fatal(err)
		}
		return tv.Float64s()
	}
	y, dx, dw := run("forward", 2), run("backward_data", 0), run("backward_filter", 1)
	dot := func(a, b []float64) (s float64) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	if a, b, c := dot(y, g), dot(x, dx), dot(w, dw); a != b || a != c || a == 0 {
		t.Errorf("⟨conv(x, w), g⟩ = %g, ⟨x, dx⟩ = %g, ⟨w, dw⟩ = %g: want equal and non-zero", a, b, c)
	}
	// y[1, 0, 2, 3] written out: rows 2·2-1+a, columns 3-2+2b.
	want := 0.0
	for c := range int64(3) {
		for a := range int64(3) {
			for b := range int64(2) {
				r, q := 4-1+a, 1+2*b
				if r < 5 && q < 4 {
					want += x[((1*3+c)*5+r)*4+q] * w[((0*3+c)*3+a)*2+b]
				}
			}
		}
	}
	if got := y[((1*2+0)*3+2)*6+3]; got != want {
		t.Errorf("y[1, 0, 2, 3] = %g, want %g", got, want)
	}
}

// TestLibraryConv2DChannelsLast checks that each direction of
// gpu.library_conv2d with layout "NHWC" writes what the NCHW op writes,
// stored channels last, on the same tensors stored channels last.
func TestLibraryConv2DChannelsLast(t *testing.T) {
	const geo = `strides = array<i64: 2, 1>, padding = array<i64: 1, 2>, dilations = array<i64: 1, 2>`
	xs, ws, ys := []int64{2, 3, 5, 4}, []int64{2, 3, 3, 2}, []int64{2, 2, 3, 6}
	last := func(s []int64) []int64 { return []int64{s[0], s[2], s[3], s[1]} }
	typ := func(s []int64) string { return fmt.Sprintf("memref<%dx%dx%dx%dxbf16>", s[0], s[1], s[2], s[3]) }
	src := ""
	for _, dir := range []string{"forward", "backward_data", "backward_filter"} {
		src += fmt.Sprintf("func.func @%s(%%x: %s, %%w: %s, %%y: %s) {\n  \"gpu.library_conv2d\"(%%x, %%w, %%y) <{%s, direction = %q}> : (%s, %s, %s) -> ()\n  return\n}\n",
			dir, typ(xs), typ(ws), typ(ys), geo, dir, typ(xs), typ(ws), typ(ys))
		src += fmt.Sprintf("func.func @%s_nhwc(%%x: %s, %%w: %s, %%y: %s) {\n  \"gpu.library_conv2d\"(%%x, %%w, %%y) <{%s, direction = %q, layout = \"NHWC\"}> : (%s, %s, %s) -> ()\n  return\n}\n",
			dir, typ(last(xs)), typ(last(ws)), typ(last(ys)), geo, dir, typ(last(xs)), typ(last(ws)), typ(last(ys)))
	}
	m, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{})
	if err == nil {
		err = ir.Verify(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	// toLast stores v, [s0, s1, s2, s3], as [s0, s2, s3, s1].
	toLast := func(s []int64, v []float64) []float64 {
		out := make([]float64, len(v))
		for a := range s[0] {
			for b := range s[1] {
				for c := range s[2] {
					for d := range s[3] {
						out[((a*s[2]+c)*s[3]+d)*s[1]+b] = v[((a*s[1]+b)*s[2]+c)*s[3]+d]
					}
				}
			}
		}
		return out
	}
	vals := func(s []int64, seed int) []float64 {
		out := make([]float64, s[0]*s[1]*s[2]*s[3])
		for i := range out {
			out[i] = float64((i*7+seed*3)%5 - 2)
		}
		return out
	}
	run := func(fn string, shapes [3][]int64, data [3][]float64, written int) []float64 {
		var bufs []*interp.Buffer
		for i := range 3 {
			tv, err := interp.FromFloat64s(ir.BF16, shapes[i], data[i])
			if err != nil {
				t.Fatal(err)
			}
			b := interp.BufferFromTensor(tv)
			bufs = append(bufs, b)
		}
		if _, err := interp.New(m).Call(fn, bufs[0], bufs[1], bufs[2]); err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		tv, err := bufs[written].Tensor()
		if err != nil {
			t.Fatal(err)
		}
		return tv.Float64s()
	}
	shapes := [3][]int64{xs, ws, ys}
	data := [3][]float64{vals(xs, 1), vals(ws, 2), vals(ys, 3)}
	var lastShapes [3][]int64
	var lastData [3][]float64
	for i := range 3 {
		lastShapes[i], lastData[i] = last(shapes[i]), toLast(shapes[i], data[i])
	}
	for written, dir := range map[int]string{2: "forward", 0: "backward_data", 1: "backward_filter"} {
		want := toLast(shapes[written], run(dir, shapes, data, written))
		got := run(dir+"_nhwc", lastShapes, lastData, written)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: element %d of the channels-last result is %g, want %g", dir, i, got[i], want[i])
				break
			}
		}
	}
}
