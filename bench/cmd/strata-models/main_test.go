package main

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/bench"
)

// TestWriteReportMode: the report reads Strata's side in the mode the
// rows ran in (it took "default" and panicked on a reduce-overhead run),
// says when a row has no result, writes a line per compared output and
// the spread of the timed calls where the row has it.
func TestWriteReportMode(t *testing.T) {
	r := &bench.Results{Modes: []string{"reduce-overhead"}, Workloads: []bench.WorkloadResult{
		{Name: "resnet50_train", Strata: map[string]*bench.StrataMode{"reduce-overhead": {Ms: 20.34, FirstCallS: 1.5}},
			Torch:       map[string]*bench.TorchMode{"eager": {Ms: 24.4}},
			Correctness: &bench.Check{MaxScaled: 3.6, Tol: 0.05, OK: true},
			Tensors:     []bench.TensorCheck{{Name: "loss", Shape: []int{}, VsTorch: bench.Check{Tol: 0.05, OK: true}, Pass: "tol"}}},
		{Name: "gpt2_train", Strata: map[string]*bench.StrataMode{}},
		{Name: "gpt2_prefill", Strata: map[string]*bench.StrataMode{"reduce-overhead": {Ms: 4.61, MinMs: 4.5, MaxMs: 6.125, FirstCallS: 0.38}},
			Torch: map[string]*bench.TorchMode{"default": {Ms: 5.197, MinMs: 5.1, MaxMs: 5.5}}},
	}}
	var b strings.Builder
	writeReport(&b, r)
	out := b.String()
	for _, want := range []string{"resnet50_train   strata   20.340 ms (first call 1.50 s) | torch eager 24.400 ms | max_scaled 3.6 (tol 0.05) ok=true",
		"\n    loss []: vs torch 0 (norm 0)", "gpt2_train       strata: no reduce-overhead result",
		"gpt2_prefill     strata    4.610 ms [4.500–6.125] (first call 0.38 s) | torch default 5.197 ms [5.100–5.500]"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
