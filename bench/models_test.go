package bench

import (
	"io"
	"os"
	"path/filepath"
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
