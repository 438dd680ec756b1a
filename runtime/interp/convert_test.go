package interp

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/npy"
)

func TestNPYRoundTrip(t *testing.T) {
	for _, v := range []*Tensor{
		must(FromFloat64s(ir.F64, []int64{2}, []float64{1.5, math.Inf(-1)})),
		must(FromFloat64s(ir.F32, nil, []float64{0.25})),
		must(FromFloat64s(ir.F16, []int64{1, 2}, []float64{0.1, -65504})),
		must(FromFloat64s(ir.BF16, []int64{2}, []float64{3.140625, -1})),
		must(FromInt64s(ir.I1, []int64{3}, []int64{1, 0, 1})),
		must(FromInt64s(ir.I8, []int64{2}, []int64{-128, 127})),
		must(FromInt64s(ir.I16, []int64{2}, []int64{-300, 300})),
		must(FromInt64s(ir.I32, []int64{2}, []int64{math.MinInt32, 7})),
		must(FromInt64s(ir.I64, []int64{0, 3}, nil)),
		must(FromInt64s(ir.Index, []int64{1}, []int64{99})),
	} {
		arr, err := ToNPY(v)
		if err != nil {
			t.Fatalf("ToNPY(%s): %v", v, err)
		}
		want := ir.Type(ir.TensorOf(v.shape, v.elem))
		if len(v.shape) == 0 {
			want = v.elem
		}
		back, err := FromNPY(arr, want)
		if err != nil {
			t.Fatalf("FromNPY(%s): %v", want, err)
		}
		if got := back.(*Tensor); got.Format() != v.Format() || !slices.Equal(got.Bits(), v.Bits()) {
			t.Errorf("round trip of %s gave %s", v.Format(), got.Format())
		}
	}
}

func TestFromNPYErrors(t *testing.T) {
	f64, _ := npy.FromSlice([]int64{3}, []float64{1, 2, 3})
	for _, tc := range []struct {
		want ir.Type
		msg  string
	}{
		{ir.TensorOf([]int64{3}, ir.F32), "expected tensor<3xf32> (a float32 array), got a float64 array of shape [3]"},
		{ir.TensorOf([]int64{4}, ir.F64), "expected tensor<4xf64>, got a float64 array of shape [3]"},
		{ir.F64, "expected f64, got a float64 array of shape [3]"},
		{ir.TensorOf([]int64{3}, ir.IntegerOf(3)), "no .npy dtype holds i3 elements"},
	} {
		if _, err := FromNPY(f64, tc.want); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("FromNPY as %s: %v, want %q", tc.want, err, tc.msg)
		}
	}
	if _, err := FromNPY(f64, ir.TensorOf([]int64{ir.Dynamic}, ir.F64)); err != nil {
		t.Errorf("dynamic dim: %v", err)
	}
}

func TestRandomInputs(t *testing.T) {
	ft := ir.FunctionOf([]ir.Type{ir.TensorOf([]int64{64}, ir.F32), ir.TensorOf([]int64{2, 32}, ir.I32), ir.I1, ir.Index, ir.BF16}, nil)
	a, err := RandomInputs(ft, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RandomInputs(ft, 7)
	c, _ := RandomInputs(ft, 8)
	for i := range a {
		if err := checkValue(a[i], ft.Inputs[i]); err != nil {
			t.Errorf("argument %d: %v", i, err)
		}
		if a[i].(*Tensor).Format() != b[i].(*Tensor).Format() {
			t.Errorf("argument %d differs between runs with one seed", i)
		}
	}
	if a[0].(*Tensor).Format() == c[0].(*Tensor).Format() {
		t.Error("seeds 7 and 8 gave the same floats")
	}
	for _, f := range a[0].(*Tensor).Float64s() {
		if f < -1 || f >= 1 {
			t.Errorf("float %v outside [-1, 1)", f)
		}
	}
	for _, v := range a[1].(*Tensor).Int64s() {
		if v < -8 || v >= 8 {
			t.Errorf("int %v outside [-8, 8)", v)
		}
	}
	if fmt.Sprint(a[0].(*Tensor).Float64s()[:2]) == "[0 0]" {
		t.Error("floats look unset")
	}
	_, err = RandomInputs(ir.FunctionOf([]ir.Type{ir.TensorOf([]int64{ir.Dynamic}, ir.F32)}, nil), 1)
	if err == nil || !strings.Contains(err.Error(), "argument 0 has dynamic type tensor<?xf32>") {
		t.Errorf("dynamic argument: %v", err)
	}
}
