package ircmain

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/npy"
)

// swap returns its arguments in the other order; it needs only func ops.
const swap = `func.func @main(%x: f32, %y: tensor<2x3xi32>) -> (tensor<2x3xi32>, f32) {
  return %y, %x : tensor<2x3xi32>, f32
}
func.func private @helper() {
  return
}
`

func TestRunRandomInputsIsDeterministic(t *testing.T) {
	path := writeFile(t, "swap.mlir", swap)
	a := irc(t, "", "run", path, "--random-inputs", "3")
	b := irc(t, "", "run", "--random-inputs=3", path)
	if a.status != ExitOK {
		t.Fatalf("status %d, stderr:\n%s", a.status, a.stderr)
	}
	lines := strings.Split(strings.TrimSpace(a.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "result 0: shape (2, 3) dtype int32 sum ") ||
		!strings.HasPrefix(lines[1], "result 1: shape () dtype float32 sum ") || !strings.Contains(lines[1], " hash ") {
		t.Errorf("unexpected summary:\n%s", a.stdout)
	}
	if a.stdout != b.stdout {
		t.Errorf("same seed, different results:\n%s\n%s", a.stdout, b.stdout)
	}
	if c := irc(t, "", "run", path, "--random-inputs", "4"); c.stdout == a.stdout {
		t.Errorf("seeds 3 and 4 gave the same inputs:\n%s", c.stdout)
	}
}

func TestRunNpyRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, "swap.mlir", swap)
	x, err := npy.FromSlice([]int64{}, []float32{2.5})
	if err != nil {
		t.Fatal(err)
	}
	y, err := npy.FromSlice([]int64{2, 3}, []int32{1, -2, 3, -4, 5, -6})
	if err != nil {
		t.Fatal(err)
	}
	xf, yf := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	for f, a := range map[string]*npy.Array{xf: x, yf: y} {
		if err := npy.WriteFile(f, a); err != nil {
			t.Fatal(err)
		}
	}
	o0, o1 := filepath.Join(dir, "o0.npy"), filepath.Join(dir, "o1.npy")
	r := irc(t, "", "run", path, "--func", "main", "--input", xf, "--input", yf, "--output", o0, "--output", o1, "--backend=eager")
	if r.status != ExitOK || r.stdout != "" {
		t.Fatalf("status %d, stdout %q, stderr:\n%s", r.status, r.stdout, r.stderr)
	}
	got0, err := npy.ReadFile(o0)
	if err != nil {
		t.Fatal(err)
	}
	got1, err := npy.ReadFile(o1)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := npy.ToSlice[int32](got0); !slices.Equal(v, []int32{1, -2, 3, -4, 5, -6}) || !slices.Equal(got0.Shape, []int64{2, 3}) {
		t.Errorf("result 0 = %v of shape %v", v, got0.Shape)
	}
	if v, _ := npy.ToSlice[float32](got1); !slices.Equal(v, []float32{2.5}) || len(got1.Shape) != 0 {
		t.Errorf("result 1 = %v of shape %v", v, got1.Shape)
	}
	// Without --output, the summary lists the values.
	r = irc(t, "", "run", path, "--input", xf, "--input", yf)
	if !strings.Contains(r.stdout, "values [1 -2 3 -4 5 -6]") || !strings.Contains(r.stdout, "sum -3 ") {
		t.Errorf("summary:\n%s", r.stdout)
	}

	// Arguments in the wrong order: the error names the argument, the
	// expected type and what the file holds.
	r = irc(t, "", "run", path, "--input", yf, "--input", xf)
	want := "argument 0 (" + yf + "): expected f32 (dtype float32, shape ()), got dtype int32, shape (2, 3)"
	if r.status != ExitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("status %d, stderr %q, want %q", r.status, r.stderr, want)
	}
}

func TestRunErrors(t *testing.T) {
	path := writeFile(t, "swap.mlir", swap)
	two := writeFile(t, "two.mlir", "func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n")
	bad := writeFile(t, "bad.mlir", "func.func @main() {\n  return\n}\nfunc.func @main() {\n  return\n}\n")
	tests := []struct {
		name   string
		args   []string
		status int
		want   string
	}{
		{"no inputs", []string{path}, ExitUsage, "takes 2 arguments, got 0 --input files"},
		{"both inputs", []string{path, "--random-inputs", "1", "--input", "x.npy"}, ExitUsage, "either --input files or --random-inputs"},
		{"bad seed", []string{path, "--random-inputs", "x"}, ExitUsage, "want a non-negative integer seed"},
		{"missing npy", []string{path, "--input", "/nonexistent.npy", "--input", "/nonexistent.npy"}, ExitUsage, "argument 0: "},
		{"outputs", []string{path, "--random-inputs", "1", "--output", "a.npy"}, ExitUsage, "@main has 2 results, got 1 --output files"},
		{"backend", []string{path, "--backend", "tpu"}, ExitUsage, `unknown --backend "tpu"`},
		{"no func", []string{path, "--func", "nope"}, ExitUsage, "no function named @nope (functions: @main, @helper)"},
		{"ambiguous", []string{two}, ExitUsage, "several public functions (@a, @b) and none is @main"},
		{"no file", []string{}, ExitUsage, "expected one input file, got 0"},
		{"missing file", []string{"/nonexistent.mlir"}, ExitUsage, "/nonexistent.mlir"},
		{"invalid IR", []string{bad}, ExitDiagnostics, "bad.mlir:4:"},
		{"bad pipeline", []string{path, "--pass-pipeline", "builtin.module(nope)"}, ExitUsage, "'nope' does not refer to a registered pass"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := irc(t, "", append([]string{"run"}, tc.args...)...)
			if r.status != tc.status || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("status %d (want %d), stderr %q, want it to contain %q", r.status, tc.status, r.stderr, tc.want)
			}
		})
	}
	// --func picks a private function too, and takes a leading @.
	if r := irc(t, "", "run", path, "--func=@helper"); r.status != ExitOK || r.stdout != "" {
		t.Errorf("--func=@helper: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
}

func TestNpyConversionsRoundTrip(t *testing.T) {
	cases := []struct {
		typ ir.Type
		arr *npy.Array
	}{
		{ir.F64, must(npy.FromSlice([]int64{}, []float64{-1.5}))},
		{ir.TensorOf([]int64{2}, ir.F16), must(npy.FromSlice([]int64{2}, []npy.Float16Bits{0x3c00, 0xc000}))},
		{ir.TensorOf([]int64{3}, ir.I1), must(npy.FromSlice([]int64{3}, []bool{true, false, true}))},
		{ir.TensorOf([]int64{2}, ir.I8), must(npy.FromSlice([]int64{2}, []int8{-128, 127}))},
		{ir.TensorOf([]int64{2}, ir.IntegerWithSign(8, ir.Unsigned)), must(npy.FromSlice([]int64{2}, []uint8{0, 255}))},
		{ir.TensorOf([]int64{ir.Dynamic}, ir.I64), must(npy.FromSlice([]int64{2}, []int64{-1 << 62, 7}))},
		{ir.Index, must(npy.FromSlice([]int64{}, []int64{42}))},
		{ir.TensorOf([]int64{2}, ir.IntegerWithSign(8, ir.Signed)), must(npy.FromSlice([]int64{2}, []int8{-128, 127}))},
		{ir.TensorOf([]int64{2}, ir.IntegerWithSign(16, ir.Signed)), must(npy.FromSlice([]int64{2}, []int16{-32768, 5}))},
		{ir.TensorOf([]int64{2}, ir.IntegerWithSign(32, ir.Signed)), must(npy.FromSlice([]int64{2}, []int32{-1 << 31, 9}))},
		{ir.IntegerWithSign(64, ir.Signed), must(npy.FromSlice([]int64{}, []int64{-1 << 63}))},
		{ir.TensorOf([]int64{2}, ir.IntegerWithSign(1, ir.Unsigned)), must(npy.FromSlice([]int64{2}, []bool{false, true}))},
	}
	for _, c := range cases {
		v, err := fromArray(c.arr, c.typ)
		if err != nil {
			t.Errorf("%s: %v", c.typ, err)
			continue
		}
		back, err := toArray(v)
		if err != nil {
			t.Errorf("%s: %v", c.typ, err)
			continue
		}
		if back.DType != c.arr.DType || !slices.Equal(back.Shape, c.arr.Shape) || string(back.Data) != string(c.arr.Data) {
			t.Errorf("%s: round trip gave %v %v %x, want %v %v %x", c.typ, back.DType, back.Shape, back.Data, c.arr.DType, c.arr.Shape, c.arr.Data)
		}
	}
	// bf16 travels as float32: in, rounded to the nearest bf16 (ties to
	// even); out, exactly.
	in := []float32{1, 1.00390625, 1.01171875, -3.140625}
	want := []float32{1, 1, 1.015625, -3.140625}
	v, err := fromArray(must(npy.FromSlice([]int64{4}, in)), ir.TensorOf([]int64{4}, ir.BF16))
	if err != nil {
		t.Fatalf("bf16 in: %v", err)
	}
	out, err := toArray(v)
	if err != nil {
		t.Fatalf("bf16 out: %v", err)
	}
	if wantArr := must(npy.FromSlice([]int64{4}, want)); out.DType != npy.Float32 || string(out.Data) != string(wantArr.Data) {
		t.Errorf("bf16 round trip of %v gave %v %x, want float32 %v", in, out.DType, out.Data, want)
	}
	if _, err := fromArray(must(npy.FromSlice([]int64{}, []float64{1})), ir.BF16); err == nil || !strings.Contains(err.Error(), "dtype float32") {
		t.Errorf("bf16 from float64: err = %v", err)
	}
}

func must(a *npy.Array, err error) *npy.Array {
	if err != nil {
		panic(err)
	}
	return a
}
