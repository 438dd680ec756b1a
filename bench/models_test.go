package bench

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn/safetensors"
)

// TestModelRowsSmall runs every model row at its small size on the
// interpreter, then reports against a stand-in PyTorch side that copied
// Strata's outputs (and one that changed them): the plumbing from the
// weights to the results rows.
func TestModelRowsSmall(t *testing.T) {
	dir := t.TempDir()
	man, err := RunModels(dir, nil, Small, frontend.InterpBackend, 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Order) != len(ModelRows) {
		t.Fatalf("rows %v", man.Order)
	}
	torch := TorchSide{Torch: "stand-in", Workloads: map[string]TorchWorkload{}}
	for _, name := range man.Order {
		sm := man.Rows[name]
		if sm.Error != "" || sm.Ms <= 0 || sm.FirstCallS <= 0 {
			t.Fatalf("%s: %+v", name, sm)
		}
		if name == "gpt2_dynamic" && (sm.Compiles != 1 || sm.TotalS < sm.FirstCallS) {
			t.Errorf("%s: %+v, want one compile for %d lengths", name, sm, len(gpt2DynamicLengths(Small)))
		}
		in, err := safetensors.Read(filepath.Join(dir, name+".in.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Tensors) < 3 {
			t.Errorf("%s: %d tensors in the inputs file", name, len(in.Tensors))
		}
		out, err := safetensors.Read(filepath.Join(dir, name+".strata.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		var keep []*safetensors.Tensor
		for _, o := range out.Tensors {
			if o.Name != "tokens" {
				keep = append(keep, o)
			}
		}
		if name == "gpt2_prefill" {
			// One changed logit: the comparison must notice.
			keep[0].Data = append([]byte(nil), keep[0].Data...)
			keep[0].Data[3] ^= 0x40
		}
		if err := safetensors.Write(filepath.Join(dir, name+".torch.safetensors"), keep, nil); err != nil {
			t.Fatal(err)
		}
		torch.Workloads[name] = TorchWorkload{Modes: map[string]*TorchMode{"eager": {Ms: 2 * sm.Ms}, "default": {Ms: sm.Ms, FirstCallS: 1}}}
	}
	if err := writeJSON(filepath.Join(dir, ModelsTorchFile), torch); err != nil {
		t.Fatal(err)
	}
	res, err := ReportModels(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Workloads {
		c := w.Correctness
		if c == nil {
			t.Fatalf("%s: no correctness (%s)", w.Name, w.Unsupported)
		}
		if want := w.Name != "gpt2_prefill"; c.OK != want {
			t.Errorf("%s: correctness %+v, want ok=%v", w.Name, c, want)
		}
		if r := w.Ratios["default"]; r < 0.99 || r > 1.01 {
			t.Errorf("%s: ratio %g, want 1", w.Name, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ModelsStrataFile)); err != nil {
		t.Error(err)
	}
	if err := WriteModelResults(filepath.Join(dir, "r.json"), res); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if !strings.Contains(string(b), `"cnn_small_train"`) || !strings.Contains(string(b), `"ratios"`) {
		t.Errorf("results file:\n%s", b)
	}
}

// TestResNetTrainFirstStep checks what resnet50_train leaves for the
// comparison with PyTorch at its small size on the interpreter: the
// updated stem weight is exactly one SGD step (momentum buffer starting
// at the gradient, weight decay) from the initial weight with the
// recorded gradient, the running statistics moved once from their
// initial values, and the loss is near ln(classes) for a fresh model.
func TestResNetTrainFirstStep(t *testing.T) {
	in, out, sm, err := runResNetTrain(Small, frontend.Options{Backend: frontend.InterpBackend}, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sm.Ms <= 0 || sm.FirstCallS <= 0 {
		t.Errorf("timings %+v", sm)
	}
	for _, name := range []string{"loss", "grad.stem.conv.weight", "grad.stages.0.0.c3.bn.weight", "grad.fc.weight",
		"after.stem.conv.weight", "after.fc.bias", "after.stem.bn.running_var", "after.stages.1.0.c3.bn.running_mean"} {
		if out[name] == nil {
			t.Fatalf("no output %q (have %d)", name, len(out))
		}
		if dt := out[name].DType(); dt != frontend.Float32 {
			t.Errorf("%s is %v, want float32", name, dt)
		}
	}
	if l := out["loss"].Item(); math.Abs(l-math.Log(10)) > 1 {
		t.Errorf("first loss %g, want near ln 10", l)
	}
	w, g, after := in["stem.conv.weight"].Float64s(), out["grad.stem.conv.weight"].Float64s(), out["after.stem.conv.weight"].Float64s()
	moved := false
	for i := range w {
		want := w[i] - 0.1*(g[i]+1e-4*w[i])
		if math.Abs(after[i]-want) > 1e-6*(math.Abs(w[i])+math.Abs(g[i])) {
			t.Fatalf("stem.conv.weight[%d]: %g after the first step, want %g (w %g, grad %g)", i, after[i], want, w[i], g[i])
		}
		moved = moved || after[i] != w[i]
	}
	if !moved {
		t.Error("the first step did not change stem.conv.weight")
	}
	// One update of the running variance from 1: 0.9 + 0.1·var > 0.9.
	for i, v := range out["after.stem.bn.running_var"].Float64s() {
		if v == 1 || v <= 0.9 {
			t.Errorf("stem.bn.running_var[%d] = %g after one step", i, v)
		}
	}
	if rm := out["after.stages.1.0.c3.bn.running_mean"].Float64s(); slices.Max(rm) == 0 && slices.Min(rm) == 0 {
		t.Errorf("the last block's running mean did not move: %v", rm)
	}
}
