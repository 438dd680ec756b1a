package bench

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn/safetensors"
)

// writeSides writes outputs (name → values; a [2, 3], the others 1-D)
// as dir/row.SIDE.safetensors.
func writeSides(t *testing.T, dir, side string, outputs map[string][]float32) {
	t.Helper()
	var sts []*safetensors.Tensor
	for _, name := range []string{"a", "b", "logits"} {
		vs, ok := outputs[name]
		if !ok {
			continue
		}
		sh := []int{len(vs)}
		if name == "a" {
			sh = []int{2, 3}
		}
		st, err := safetensors.FromFrontend(name, frontend.FromSlice(vs, sh...), safetensors.F32)
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	if err := safetensors.Write(filepath.Join(dir, "row."+side+".safetensors"), sts, nil); err != nil {
		t.Fatal(err)
	}
}

// TestReferenceCheck checks the float32-reference comparison of a bf16
// row: Strata passes when it is no further from float32 than PyTorch is,
// fails when it is further, and a row without a reference has none.
func TestReferenceCheck(t *testing.T) {
	ref := []float32{1, -2, 0.5, 3, -0.25, 0}
	plus := func(delta []float32) map[string][]float32 {
		vs := make([]float32, len(ref))
		for i := range vs {
			vs[i] = ref[i] + delta[i]
		}
		return map[string][]float32{"logits": vs}
	}
	small := []float32{0.01, 0, -0.01, 0, 0, 0.01}
	large := []float32{-0.2, 0.1, 0.05, -0.2, 0, 0}
	for _, tc := range []struct {
		name          string
		strata, torch []float32
		want          bool
	}{{"strata-closer", small, large, true}, {"torch-closer", large, small, false}} {
		dir := t.TempDir()
		writeSides(t, dir, "f32", plus(make([]float32, len(ref))))
		writeSides(t, dir, "strata", plus(tc.strata))
		writeSides(t, dir, "torch", plus(tc.torch))
		ts, err := checkTensors(dir, "row", 0.04)
		if err != nil {
			t.Fatal(err)
		}
		r := referenceCheck(ts)
		if r == nil {
			t.Fatalf("%s: no reference check", tc.name)
		}
		if r.AsAccurate != tc.want || r.Strata.MaxScaled == 0 || r.Torch.MaxScaled == 0 {
			t.Errorf("%s: %+v, want as_accurate=%v", tc.name, r, tc.want)
		}
	}
	dir := t.TempDir()
	writeSides(t, dir, "strata", plus(small))
	writeSides(t, dir, "torch", plus(large))
	ts, err := checkTensors(dir, "row", 0.04)
	if err != nil {
		t.Fatal(err)
	}
	if r := referenceCheck(ts); r != nil || ts[0].StrataVsF32 != nil || ts[0].WorstF32 != nil || ts[0].Worst.F32 != nil {
		t.Errorf("no reference file: %v, %+v", r, ts[0])
	}
}

// TestTensorChecks checks what the report says of each output: its three
// comparisons, the worst elements by index with the three sides' values
// (a NaN kept through JSON), the row's figure the worst output's, and a
// clear error for an output Strata lacks.
func TestTensorChecks(t *testing.T) {
	dir := t.TempDir()
	// a [2,3]: Strata off at [1,2] against PyTorch, and furthest from
	// float32 at [0,1]; b: a NaN on Strata's side at 2.
	nan := float32(math.NaN())
	writeSides(t, dir, "f32", map[string][]float32{"a": {1, 2, 3, 4, 5, 6}, "b": {1, 1, 1, 1}})
	writeSides(t, dir, "torch", map[string][]float32{"a": {1, 2.1, 3, 4, 5, 6.5}, "b": {1, 1, 1, 1}})
	writeSides(t, dir, "strata", map[string][]float32{"a": {1, 2.2, 3, 4, 5, 6}, "b": {1, 1, nan, 1}})

	ts, err := checkTensors(dir, "row", 0.04)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "a" || ts[1].Name != "b" {
		t.Fatalf("outputs %+v", ts)
	}
	a := ts[0]
	if a.Worst == nil || !slices.Equal(a.Worst.Index, []int{1, 2}) || a.Worst.Strata != 6 || a.Worst.Torch != 6.5 || a.Worst.F32 == nil || *a.Worst.F32 != 6 {
		t.Errorf("a's worst against PyTorch: %v, want [1 2]: strata 6 torch 6.5 f32 6", a.Worst)
	}
	if a.WorstF32 == nil || !slices.Equal(a.WorstF32.Index, []int{0, 1}) || math.Abs(float64(a.WorstF32.Strata)-2.2) > 1e-6 {
		t.Errorf("a's furthest from float32: %v, want [0 1]: strata 2.2", a.WorstF32)
	}
	if a.VsTorch.OK || a.StrataVsF32 == nil || a.TorchVsF32 == nil || a.TorchVsF32.MaxScaled <= 0 {
		t.Errorf("a's checks %+v %+v %+v", a.VsTorch, a.StrataVsF32, a.TorchVsF32)
	}
	b := ts[1]
	if b.VsTorch.OK || b.Worst == nil || b.Worst.Index[0] != 2 || !math.IsNaN(float64(b.Worst.Strata)) {
		t.Errorf("b's NaN: %+v, worst %v", b.VsTorch, b.Worst)
	}
	line := b.String()
	if !strings.Contains(line, "b [4]") || !strings.Contains(line, "worst [2]: strata NaN torch 1 f32 1") {
		t.Errorf("report line %q", line)
	}
	js, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	var back []TensorCheck
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if !math.IsNaN(float64(back[1].Worst.Strata)) || back[0].Worst.Torch != 6.5 {
		t.Errorf("after JSON: %v %v", back[0].Worst, back[1].Worst)
	}
	// The row's figure: the worst output's (a's max_scaled; failing).
	w := worstCheck([]*Check{&ts[0].VsTorch, &ts[1].VsTorch})
	if w.OK || w.MaxScaled != a.VsTorch.MaxScaled {
		t.Errorf("row's check %+v", w)
	}

	writeSides(t, dir, "strata", map[string][]float32{"b": {1, 1, 1, 1}})
	if _, err := checkTensors(dir, "row", 0.04); err == nil || !strings.Contains(err.Error(), "a: Strata has no such output") {
		t.Errorf("Strata without output a: %v", err)
	}
}

// TestTensorCheckCriterion checks how an output passes: within the
// tolerance of PyTorch ("tol"); otherwise by PyTorch's criterion against
// float32 ("rmse": Strata's norm error at most 3× PyTorch's + tol/10),
// which a 4× error, a NaN, or the absence of a float32 run fails; "noise"
// where PyTorch's own error is 50% or more.
func TestTensorCheckCriterion(t *testing.T) {
	ref := []float32{1, -2, 0.5, 3, -0.25, 0.75, -1, 2}
	// off returns ref with a relative error of e on alternate signs.
	off := func(e float32) []float32 {
		vs := make([]float32, len(ref))
		for i, r := range ref {
			if i%2 == 0 {
				vs[i] = r * (1 + e)
			} else {
				vs[i] = r * (1 - e)
			}
		}
		return vs
	}
	nan := off(0.1)
	nan[3] = float32(math.NaN())
	for _, tc := range []struct {
		name          string
		strata, torch []float32
		f32           bool
		pass          string
		ratio         float64
	}{
		{"within tol", off(0.01), off(-0.01), true, "tol", 1},
		{"2× PyTorch's error", off(0.2), off(-0.1), true, "rmse", 2},
		{"4× PyTorch's error", off(0.4), off(-0.1), true, "", 4},
		{"as far, no float32 run", off(0.1), off(-0.1), false, "", 0},
		{"NaN", nan, off(-0.1), true, "", -1},
		{"PyTorch's noise", off(0.9), off(-0.6), true, "noise", 1.5},
	} {
		dir := t.TempDir()
		writeSides(t, dir, "strata", map[string][]float32{"logits": tc.strata})
		writeSides(t, dir, "torch", map[string][]float32{"logits": tc.torch})
		if tc.f32 {
			writeSides(t, dir, "f32", map[string][]float32{"logits": ref})
		}
		ts, err := checkTensors(dir, "row", 0.04)
		if err != nil {
			t.Fatal(err)
		}
		got := ts[0]
		if got.Pass != tc.pass || (tc.ratio >= 0 && math.Abs(got.RMSERatio-tc.ratio) > 1e-3*tc.ratio) {
			t.Errorf("%s: pass %q rmse ratio %g, want %q %g\n%s", tc.name, got.Pass, got.RMSERatio, tc.pass, tc.ratio, got)
		}
		if line := got.String(); (tc.pass == "") != strings.HasSuffix(line, "FAIL") {
			t.Errorf("%s: report line %q", tc.name, line)
		}
	}
}

// TestWorstCheckFailingFirst checks that the row's figure is a failing
// output's even when a passing one has the larger max_scaled (a NaN
// fails an output with a small one).
func TestWorstCheckFailingFirst(t *testing.T) {
	nan := Check{MaxScaled: 0.001, Tol: 0.02, Mismatched: 1, NonFinite: 1}
	ok := Check{MaxScaled: 0.015, Tol: 0.02, OK: true}
	for _, cs := range [][]*Check{{&nan, &ok}, {&ok, &nan}} {
		if w := worstCheck(cs); w.OK || w.NonFinite != 1 {
			t.Errorf("worst of %+v and %+v: %+v, want the failing one", *cs[0], *cs[1], w)
		}
	}
	big := Check{MaxScaled: 0.5, Tol: 0.02, Mismatched: 3}
	if w := worstCheck([]*Check{&nan, &big, &ok}); w.MaxScaled != 0.5 {
		t.Errorf("worst of two failing: %+v, want max_scaled 0.5", w)
	}
}
