package bench

import (
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
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
// weights to the results rows. Each row's timed calls leave a Go CPU
// profile (ModelsTiming.CPUProfile).
func TestModelRowsSmall(t *testing.T) {
	dir := t.TempDir()
	man, err := RunModels(dir, nil, Small, frontend.InterpBackend, ModelsTiming{Iters: 1, CPUProfile: true}, io.Discard)
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
		if sm.MinMs <= 0 || sm.MinMs > sm.Ms || sm.Ms > sm.MaxMs {
			t.Errorf("%s: timed calls min %v, median %v, max %v", name, sm.MinMs, sm.Ms, sm.MaxMs)
		}
		if name == "gpt2_dynamic" && (sm.Compiles != 1 || sm.TotalS < sm.FirstCallS) {
			t.Errorf("%s: %+v, want one compile for %d lengths", name, sm, len(gpt2DynamicLengths(Small)))
		}
		if b, err := os.ReadFile(filepath.Join(dir, name+".cpu.pprof")); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: no gzipped CPU profile of the timed calls (%v)", name, err)
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
		// The decoding rows' rate is tokens/s: batch tokens per step, on
		// both sides (the stand-in torch takes as long).
		tokens := map[string]float64{"gpt2_decode": 1, "gpt2_decode_b8": 8}[w.Name]
		sm := man.Rows[w.Name]
		if want := tokens / (sm.Ms * 1e-3); tokens > 0 && (w.RateUnit != "tokens/s" || math.Abs(w.Rate-want) > 1e-6*want || math.Abs(w.TorchRate-want) > 1e-6*want) {
			t.Errorf("%s: rate %g %s, torch %g; want %g tokens/s on both sides", w.Name, w.Rate, w.RateUnit, w.TorchRate, want)
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
// recorded gradient, the running statistics moved once, and the loss is near ln(classes) for a fresh model.
func TestResNetTrainFirstStep(t *testing.T) {
	in, out, sm, err := runResNetTrain(Small, frontend.Options{Backend: frontend.InterpBackend}, timing{iters: 2}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sm.Ms <= 0 || sm.FirstCallS <= 0 {
		t.Errorf("timings %+v", sm)
	}
	for _, name := range []string{"loss", "grad.stem.conv.weight", "grad.stages.0.0.c3.bn.weight", "grad.fc.weight",
		"grad.stages.1.0.c1.conv.weight", "grad.stages.1.0.c3.conv.weight", "step.stem.conv.weight", "step.fc.bias", "step.stem.bn.running_var", "step.stages.1.0.c3.bn.running_mean"} {
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
	w, g, step := in["stem.conv.weight"].Float64s(), out["grad.stem.conv.weight"].Float64s(), out["step.stem.conv.weight"].Float64s()
	moved := false
	for i := range w {
		want := -0.1 * (g[i] + 1e-4*w[i])
		if math.Abs(step[i]-want) > 1e-6*(math.Abs(w[i])+math.Abs(g[i])) {
			t.Fatalf("stem.conv.weight[%d]: changed by %g in the first step, want %g (w %g, grad %g)", i, step[i], want, w[i], g[i])
		}
		moved = moved || step[i] != 0
	}
	if !moved {
		t.Error("the first step did not change stem.conv.weight")
	}
	// One update of the running variance from 1: 0.1·(var - 1) > -0.1.
	for i, v := range out["step.stem.bn.running_var"].Float64s() {
		if v == 0 || v <= -0.1 {
			t.Errorf("stem.bn.running_var[%d] changed by %g in one step", i, v)
		}
	}
	if rm := out["step.stages.1.0.c3.bn.running_mean"].Float64s(); slices.Max(rm) == 0 && slices.Min(rm) == 0 {
		t.Errorf("the last block's running mean did not move: %v", rm)
	}
}

// torchPython returns a python3 that imports torch ($STRATA_TORCH_PYTHON,
// python3 on PATH, /usr/bin/python3), or "" when there is none.
func torchPython() string {
	for _, py := range []string{os.Getenv("STRATA_TORCH_PYTHON"), "python3", "/usr/bin/python3"} {
		if py != "" && exec.Command(py, "-c", "import torch").Run() == nil {
			return py
		}
	}
	return ""
}

// TestModelsDeviceProfileNeedsNVPTX: a device profile on the interpreter
// is refused before any row runs.
func TestModelsDeviceProfileNeedsNVPTX(t *testing.T) {
	dir := t.TempDir()
	_, err := RunModels(dir, []string{"cnn_small_train"}, Small, frontend.InterpBackend, ModelsTiming{Iters: 1, Profile: 2}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "needs the nvptx backend") {
		t.Fatalf("profile on the interpreter: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ModelsStrataFile)); err == nil {
		t.Error("a row ran")
	}
}

// TestModelsMode: RunModels refuses an unknown mode before any row runs,
// and labels the manifest and the report's Strata side with the mode the
// rows were compiled in.
func TestModelsMode(t *testing.T) {
	dir := t.TempDir()
	_, err := RunModels(dir, []string{"cnn_small_train"}, Small, frontend.InterpBackend, ModelsTiming{Iters: 1, Mode: "fast"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `unknown mode "fast"`) {
		t.Fatalf("mode fast: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ModelsStrataFile)); err == nil {
		t.Error("a row ran")
	}
	man, err := RunModels(dir, []string{"cnn_small_train"}, Small, frontend.InterpBackend, ModelsTiming{Iters: 1, Mode: frontend.ModeReduceOverhead}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if man.Mode != "reduce-overhead" {
		t.Errorf("manifest mode %q", man.Mode)
	}
	sm := man.Rows["cnn_small_train"]
	torch := TorchSide{Torch: "stand-in", Workloads: map[string]TorchWorkload{
		"cnn_small_train": {Modes: map[string]*TorchMode{"default": {Ms: 2 * sm.Ms}}}}}
	if err := writeJSON(filepath.Join(dir, ModelsTorchFile), torch); err != nil {
		t.Fatal(err)
	}
	res, err := ReportModels(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := res.Workloads[0]
	if !slices.Equal(res.Modes, []string{"reduce-overhead"}) || w.Strata["reduce-overhead"] == nil || w.Strata["default"] != nil {
		t.Errorf("report modes %v, Strata side %v: want reduce-overhead only", res.Modes, w.Strata)
	}
	if r := w.Ratios["default"]; r < 0.49 || r > 0.51 {
		t.Errorf("ratio to torch.compile %g, want 0.5", r)
	}
}

// TestModelsTorchCPU runs the PyTorch side of the CNN rows, the
// decoding rows, gpt2_dynamic and gpt2_train (models_torch.py, through
// testdata/models_torch_cpu.py on the CPU) on the weights and inputs
// Strata's small rows wrote, and checks the report: the same models, the
// same logits of the prompt and of the first decoding step (KV cache
// included), the same training step (loss,
// gradients, the updates of the weights and of batch norm's running
// statistics), within the rows' tolerances or, for the training rows, no
// further from their float32 step than PyTorch's bf16 step is. It skips
// where no python3 imports torch.
func TestModelsTorchCPU(t *testing.T) {
	py := torchPython()
	if py == "" {
		t.Skip("no python3 with torch")
	}
	dir := t.TempDir()
	rows := []string{"cnn_small_train", "gpt2_decode", "gpt2_decode_b8", "gpt2_dynamic", "resnet50_infer", "resnet50_train", "gpt2_train"}
	if _, err := RunModels(dir, rows, Small, frontend.InterpBackend, ModelsTiming{Iters: 1}, io.Discard); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("testdata", "models_torch_cpu.py"), ".", dir, strings.Join(rows, ","))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	res, err := ReportModels(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workloads) != len(rows) {
		t.Fatalf("%d rows reported, want %d", len(res.Workloads), len(rows))
	}
	for _, w := range res.Workloads {
		if e := w.Torch["eager"]; e == nil || e.Error != "" {
			t.Errorf("%s: torch side %+v", w.Name, e)
		}
		if w.Unsupported != "" || w.Correctness == nil {
			t.Errorf("%s: correctness %+v (%s)", w.Name, w.Correctness, w.Unsupported)
			continue
		}
		train := strings.HasSuffix(w.Name, "_train")
		if train && w.Reference == nil {
			t.Errorf("%s: no float32 reference", w.Name)
		}
		if !w.Correctness.OK {
			// Every output within the row's tolerance of PyTorch or, by
			// PyTorch's criterion, no more than 3× as far from float32
			// (modelcheck.go). (Torch 1.13's CPU kernels give the small
			// CNN's first-layer gradient a norm error of 0.072 against
			// float32, Strata 0.089: a ratio of 1.2.)
			t.Errorf("%s: correctness %+v; by output:\n%s", w.Name, w.Correctness, tensorLines(w.Tensors))
		}
		if w.Name == "gpt2_train" {
			// gpt2.Model.MixedLoss follows PyTorch autocast's policy
			// (bf16 products and attention, float32 residual stream,
			// layer norms, GELU, bias adds and loss). Held here: the loss
			// to the row's tolerance against PyTorch; each gradient no
			// further from the float32 step than twice PyTorch autocast's
			// (at this size, max_scaled 0.013 against 0.023 for h.0's
			// c_attn, 0.0024 against 0.0025 for ln_f; 0.0039 for ln_f
			// with the embedding rows rounded to bf16 before session 13;
			// the all-bf16 policy MixedLoss had before gave 0.0077,
			// failing this).
			file := func(side string) string { return filepath.Join(dir, w.Name+"."+side+".safetensors") }
			g, want := readOne(t, file("strata"), "loss"), readOne(t, file("torch"), "loss")
			if c, err := Compare(g, want, w.Correctness.Tol); err != nil || !c.OK {
				t.Errorf("%s: loss %v, PyTorch's %v (%v)", w.Name, g, want, err)
			}
			for _, name := range []string{"grad.h.0.attn.c_attn.weight", "grad.ln_f.weight"} {
				ref := readOne(t, file("f32"), name)
				s, err1 := Compare(readOne(t, file("strata"), name), ref, 0)
				p, err2 := Compare(readOne(t, file("torch"), name), ref, 0)
				if err := errors.Join(err1, err2); err != nil {
					t.Fatalf("%s %s: %v", w.Name, name, err)
				}
				t.Logf("%s %s against float32: Strata max_scaled %.4f norm_rel %.4f, PyTorch autocast %.4f %.4f", w.Name, name, s.MaxScaled, s.NormRel, p.MaxScaled, p.NormRel)
				if s.MaxScaled > 2*p.MaxScaled || s.NormRel > 2*p.NormRel {
					t.Errorf("%s %s: against float32 max_scaled %.4f norm_rel %.4f, want at most twice PyTorch autocast's %.4f %.4f", w.Name, name, s.MaxScaled, s.NormRel, p.MaxScaled, p.NormRel)
				}
			}
			continue
		}
	}
	// The first step's changes of the running statistics: both sides compute
	// them in float32 from the same batch.
	for _, name := range []string{"step.stem.bn.running_var", "step.stages.1.0.c3.bn.running_mean"} {
		g, w := readOne(t, filepath.Join(dir, "resnet50_train.strata.safetensors"), name), readOne(t, filepath.Join(dir, "resnet50_train.torch.safetensors"), name)
		c, err := Compare(g, w, 1e-3)
		if err != nil || !c.OK {
			t.Errorf("%s: %+v, %v", name, c, err)
		}
	}
}

func readOne(t *testing.T, path, name string) []float64 {
	t.Helper()
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	st := f.Lookup(name)
	if st == nil {
		t.Fatalf("%s: no tensor %q", path, name)
	}
	ft, err := safetensors.ToFrontend(st)
	if err != nil {
		t.Fatal(err)
	}
	return ft.Float64s()
}

// tensorLines is the report's line of each output, for a test's message.
func tensorLines(ts []TensorCheck) string {
	var b strings.Builder
	for _, tc := range ts {
		b.WriteString("\t" + tc.String() + "\n")
	}
	return b.String()
}

// TestModelsDecodeMode checks ModelsTiming.DecodeMode: the decoding rows
// compile their step in it (reduce-overhead when unset), and an unknown
// mode is refused before any row runs.
func TestModelsDecodeMode(t *testing.T) {
	for _, c := range []struct {
		mode frontend.Mode
		want string
	}{{"", "decoding step (reduce-overhead)"}, {frontend.ModeDefault, "decoding step (default)"}} {
		var log strings.Builder
		man, err := RunModels(t.TempDir(), []string{"gpt2_decode"}, Small, frontend.InterpBackend, ModelsTiming{Iters: 1, DecodeMode: c.mode}, &log)
		if err != nil {
			t.Fatal(err)
		}
		if sm := man.Rows["gpt2_decode"]; sm.Error != "" || sm.Ms <= 0 {
			t.Fatalf("mode %q: %+v", c.mode, sm)
		}
		if !strings.Contains(log.String(), c.want) {
			t.Errorf("mode %q: no %q in the log:\n%s", c.mode, c.want, log.String())
		}
	}
	if _, err := RunModels(t.TempDir(), []string{"gpt2_decode"}, Small, frontend.InterpBackend, ModelsTiming{Iters: 1, DecodeMode: "fast"}, io.Discard); err == nil || !strings.Contains(err.Error(), `unknown mode "fast"`) {
		t.Errorf("decode mode fast: err %v", err)
	}
}
