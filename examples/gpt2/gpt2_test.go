package gpt2

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/nn/safetensors"
	"github.com/strata-ir/strata/optim"
)

func TestParamCount(t *testing.T) {
	if n := ParamCount(GPT2Small); n != 124475904 {
		t.Errorf("GPT-2 124M (vocabulary 50304) has %d parameters, want 124475904", n)
	}
	if got, want := nn.NumElements(nn.Parameters(New(Toy))), ParamCount(Toy); got != want {
		t.Errorf("the toy model has %d parameters, ParamCount says %d", got, want)
	}
	names := nn.Parameters(New(Toy))
	if names[0].Name != "wte.weight" || names[2].Name != "h.0.ln_1.weight" || names[len(names)-1].Name != "ln_f.bias" {
		t.Errorf("parameter names: %s, %s, …, %s", names[0].Name, names[2].Name, names[len(names)-1].Name)
	}
}

// batch returns tokens and their next-token targets from a repeating
// sequence.
func batch(cfg Config, b, t int) (x, y *frontend.Tensor) {
	xs, ys := make([]int64, b*t), make([]int64, b*t)
	for i := range b {
		for j := range t {
			xs[i*t+j] = int64((3*i + 5*j) % cfg.Vocab)
			ys[i*t+j] = int64((3*i + 5*(j+1)) % cfg.Vocab)
		}
	}
	return frontend.FromSlice(xs, b, t), frontend.FromSlice(ys, b, t)
}

// TestTrainingStepGradients checks the toy model's fused forward and
// backward pass in float64 against central differences of its loss, on
// elements of the tied embedding, an attention projection, an MLP bias and
// the final layer norm.
func TestTrainingStepGradients(t *testing.T) {
	m := New(Toy)
	if err := nn.Cast(m, frontend.Float64); err != nil {
		t.Fatal(err)
	}
	x, y := batch(Toy, 2, 8)
	step := nn.NewGradStep(m, m.Loss, 2, frontend.Options{})
	values, grads, err := step.Call(x, y)
	if err != nil {
		t.Fatal(err)
	}
	loss := values[0].Item()
	if math.Abs(loss-math.Log(float64(Toy.Vocab))) > 0.5 {
		t.Errorf("initial loss %g, want about ln(vocab) = %g", loss, math.Log(float64(Toy.Vocab)))
	}
	r := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for pi, p := range step.Params() {
		switch p.Name {
		case "wte.weight", "wpe.weight", "h.0.attn.c_attn.weight", "h.1.mlp.c_fc.bias", "ln_f.weight", "h.1.attn.c_proj.weight":
		default:
			continue
		}
		checked++
		g := grads[pi].Float64s()
		base := p.Tensor()
		vals := base.Float64s()
		for range 3 {
			j := r.IntN(len(vals))
			at := func(d float64) float64 {
				vs := slices.Clone(vals)
				vs[j] += d
				*p.Ptr = frontend.FromSlice(vs, base.Shape()...)
				defer func() { *p.Ptr = base }()
				return m.Loss(x, y)[0].Item()
			}
			num := (at(1e-6) - at(-1e-6)) / 2e-6
			if math.Abs(num-g[j]) > 1e-6*(1+math.Abs(num))+1e-9 {
				t.Errorf("%s[%d]: gradient %g, central difference %g", p.Name, j, g[j], num)
			}
		}
	}
	if checked != 6 {
		t.Errorf("checked %d parameters, want 6", checked)
	}
}

// TestTrainLossFalls: AdamW steps on a repeating sequence.
func TestTrainLossFalls(t *testing.T) {
	m := New(Toy)
	x, y := batch(Toy, 2, 8)
	step := nn.NewGradStep(m, m.Loss, 2, frontend.Options{})
	opt, err := optim.NewAdamW(step.Params(), optim.AdamWConfig{LR: 1e-2, WeightDecay: 0.01}, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for range 15 {
		v, grads, err := step.Call(x, y)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, v[0].Item())
		if err := opt.Step(grads); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("losses %.3f", losses)
	if !(losses[len(losses)-1] < losses[0]/2) {
		t.Errorf("loss did not halve: %v", losses)
	}
}

// TestCachedDecodingMatchesRecompute generates greedily with compiled
// prefill and decode steps (the KV cache written back after each), then
// checks every generated token's logits against the full model run on
// the whole sequence so far.
func TestCachedDecodingMatchesRecompute(t *testing.T) {
	m := New(Toy)
	prompt, _ := batch(Toy, 2, 4)
	gen, err := NewGenerator(NewDecoder(m, 2, frontend.Float32), frontend.Options{Backend: frontend.InterpBackend, Fullgraph: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	toks, logits, err := gen.Generate(prompt, n)
	if err != nil {
		t.Fatal(err)
	}
	seqs := [][]int64{}
	for s, p := range [][]int64{prompt.Int64s()[:4], prompt.Int64s()[4:]} {
		seqs = append(seqs, append(slices.Clone(p), toks[s]...))
	}
	for i := range n {
		l := 4 + i // tokens known when token i was generated
		ids := append(slices.Clone(seqs[0][:l]), seqs[1][:l]...)
		full := m.Logits(frontend.FromSlice(ids, 2, l))
		want := full.Slice([]int{0, l - 1, 0}, []int{2, l, Toy.Vocab}, nil).Float64s()
		if err := full.Err(); err != nil {
			t.Fatal(err)
		}
		got := logits[i].Float64s()
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-4 {
				t.Fatalf("token %d, logit %d: cached %g, recomputed %g", i, j, got[j], want[j])
			}
		}
		for s := range 2 {
			row := want[s*Toy.Vocab : (s+1)*Toy.Vocab]
			if best := int64(slices.Index(row, slices.Max(row))); best != toks[s][i] {
				t.Fatalf("sequence %d, token %d: greedy %d, recomputed argmax %d", s, i, toks[s][i], best)
			}
		}
	}
	_, dec := gen.Steps()
	if st := dec.Frontend().Stats(); st.Compiles != 1 {
		t.Errorf("the decode step compiled %d times for %d tokens, want once", st.Compiles, n-1)
	}
}

// TestGenerateBadPrompt checks that Generate reports a failed prompt
// (a ToGPU without a GPU, say), a prompt of the wrong rank and a count
// of no tokens as errors, not panics.
func TestGenerateBadPrompt(t *testing.T) {
	gen, err := NewGenerator(NewDecoder(New(Toy), 1, frontend.Float32), frontend.Options{Backend: frontend.InterpBackend})
	if err != nil {
		t.Fatal(err)
	}
	bad := frontend.FromSlice([]int64{1, 2}).Reshape(3)
	for _, c := range []struct {
		prompt *frontend.Tensor
		n      int
		want   string
	}{
		{bad, 2, "the prompt"},
		{frontend.FromSlice([]int64{1, 2}), 2, "want a prompt [B, T]"},
		{frontend.FromSlice([]int64{1, 2}, 1, 2), 0, "at least one token"},
	} {
		if _, _, err := gen.Generate(c.prompt, c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Generate(%v, %d): %v, want an error saying %q", c.prompt.Shape(), c.n, err, c.want)
		}
	}
}

// TestSafetensors saves the toy model under GPT-2's names and loads it
// into a model initialised from another seed: the logits agree.
func TestSafetensors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpt2.safetensors")
	src := New(Toy)
	if err := safetensors.Save(path, src, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Lookup("h.1.attn.c_attn.weight") == nil || f.Lookup("wte.weight") == nil {
		t.Fatalf("names: %v", f.Names())
	}
	cfg := Toy
	cfg.Seed = 99
	dst := New(cfg)
	if err := safetensors.Load(dst, f, safetensors.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	x, _ := batch(Toy, 1, 5)
	if a, b := src.Logits(x).Float32s(), dst.Logits(x).Float32s(); !slices.Equal(a, b) {
		t.Error("the loaded model's logits differ from the saved model's")
	}
}

// TestMixedPrecisionStep checks the bf16 mixed-precision step (MixedLoss)
// of a six-layer model against the float32 step: a float32 loss near the float32 one but not
// equal to it (the step computes in bf16), float32 gradients for the
// float32 master weights within 5% (normwise), and, for every parameter
// tensor together, gradients closer to float32 than those of the step
// that runs every op in bf16 (nn.Autocast: residual stream, layer norms
// and bias adds in bf16), which MixedLoss was before it followed
// PyTorch's autocast.
func TestMixedPrecisionStep(t *testing.T) {
	cfg := Config{Vocab: 64, Ctx: 32, D: 64, Heads: 2, Layers: 6, Seed: 1}
	m := New(cfg)
	x, y := batch(cfg, 2, 32)
	ref := nn.NewGradStep(m, m.Loss, 2, frontend.Options{})
	mixed := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{})
	allBF16 := nn.NewGradStep(m, func(in ...*frontend.Tensor) []*frontend.Tensor {
		return nn.Autocast(m, frontend.BFloat16, func() []*frontend.Tensor { return m.Loss(in...) })
	}, 2, frontend.Options{})
	want, wantGrads, err := ref.Call(x, y)
	if err != nil {
		t.Fatal(err)
	}
	got, grads, err := mixed.Call(x, y)
	if err != nil {
		t.Fatal(err)
	}
	_, bf16Grads, err := allBF16.Call(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].DType() != frontend.Float32 || math.Abs(got[0].Item()-want[0].Item()) > 0.02*want[0].Item() {
		t.Errorf("mixed loss %v %g, want float32 near %g", got[0].DType(), got[0].Item(), want[0].Item())
	}
	if got[0].Item() == want[0].Item() {
		t.Errorf("mixed loss %g equals the float32 loss: the step did not compute in bf16", got[0].Item())
	}
	// dist returns the squared distance of g from w and w's squared norm.
	dist := func(g, w []float64) (diff, norm float64) {
		for j := range w {
			diff += (g[j] - w[j]) * (g[j] - w[j])
			norm += w[j] * w[j]
		}
		return diff, norm
	}
	var mixedDiff, bf16Diff, total float64
	for i, p := range mixed.Params() {
		if p.Tensor().DType() != frontend.Float32 || grads[i].DType() != frontend.Float32 {
			t.Fatalf("%s: parameter %v, gradient %v: want both float32", p.Name, p.Tensor().DType(), grads[i].DType())
		}
		w := wantGrads[i].Float64s()
		diff, norm := dist(grads[i].Float64s(), w)
		if norm > 0 && math.Sqrt(diff/norm) > 0.05 {
			t.Errorf("%s: gradient off by %.3g (normwise relative) from the float32 step's", p.Name, math.Sqrt(diff/norm))
		}
		if norm > 0 {
			b, _ := dist(bf16Grads[i].Float64s(), w)
			mixedDiff, bf16Diff = mixedDiff+diff/norm, bf16Diff+b/norm
			total++
		}
	}
	// At this size (6 layers): 0.0066 against 0.0130 (0.0073 with the embedding rows rounded to bf16), root mean square
	// over the parameter tensors of the normwise relative distances.
	mixedRMS, bf16RMS := math.Sqrt(mixedDiff/total), math.Sqrt(bf16Diff/total)
	t.Logf("gradients' distance from float32: MixedLoss %.4f, all ops in bf16 %.4f", mixedRMS, bf16RMS)
	if mixedRMS > 0.75*bf16RMS {
		t.Errorf("gradients' distance from float32 %.4f, want well under the all-bf16 step's %.4f: is the residual stream float32?", mixedRMS, bf16RMS)
	}
}

// TestMixedPrecisionPolicy checks the ops MixedLoss traces against
// PyTorch autocast's policy: every product (forward and backward) and
// every attention on bf16 operands, every layer norm and GELU of the
// forward pass on float32 ones.
func TestMixedPrecisionPolicy(t *testing.T) {
	var texts []string
	name := "policy-" + t.Name()
	frontend.RegisterBackend(name, frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		texts = append(texts, ir.Sprint(g.Module, ir.PrintOptions{}))
		return stopped{}, nil
	}))
	m := New(Toy)
	x, y := batch(Toy, 2, 8)
	step := nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, frontend.Options{Backend: name})
	if _, _, err := step.Call(x, y); !errors.Is(err, errLowered) {
		t.Fatalf("training step: %v, want the backend's stop", err)
	}
	if len(texts) != 2 {
		t.Fatalf("%d graphs, want the step's forward and backward", len(texts))
	}
	count := map[string]int{}
	for i, text := range texts {
		for _, line := range strings.Split(text, "\n") {
			for op, want := range map[string]string{"matmul": "bf16", "attention": "bf16", "attention_grad": "bf16", "layer_norm": "f32", "gelu": "f32"} {
				if !strings.Contains(line, `"graph.`+op+`"(`) {
					continue
				}
				count[op]++
				// The operand types: "(tensor<…>, …) ->".
				from := strings.LastIndex(line, " : (")
				to := strings.LastIndex(line, ") ->")
				if from < 0 || to < from {
					t.Fatalf("graph %d: no operand types in %s", i, line)
				}
				for _, ty := range strings.Split(line[from+4:to], ", ") {
					if !strings.HasSuffix(ty, "x"+want+">") {
						t.Errorf("graph %d: %s operand %s, want %s: %s", i, op, ty, want, strings.TrimSpace(line))
					}
				}
			}
		}
	}
	l := Toy.Layers
	for op, n := range map[string]int{"matmul": 3 * (4*l + 1), "attention": l, "attention_grad": l, "layer_norm": 2*l + 1, "gelu": l} {
		if count[op] < n {
			t.Errorf("%d graph.%s ops, want at least %d", count[op], op, n)
		}
	}
}

// TestMixedRows checks the embedding rows under MixedLoss: their values
// are the float32 tables' exactly (as PyTorch's autocast gathers), and
// their gradient is the one of rows gathered from the bf16 tables (a
// scatter-add of the bf16 gradient, rounded once; the cast's gradient): for tokens
// seen once, each row's gradient is the upstream gradient rounded to
// bf16, not the float32 one (the carried rounding error has no
// gradient).
func TestMixedRows(t *testing.T) {
	m := New(Toy)
	x, _ := batch(Toy, 2, 8)
	plain := m.embed(x)
	m.autocast = frontend.BFloat16
	mixed := m.embed(x)
	m.autocast = frontend.Float32
	if mixed.Err() != nil || mixed.DType() != frontend.Float32 {
		t.Fatalf("mixed rows %v %v, want float32", mixed.DType(), mixed.Err())
	}
	if !slices.Equal(mixed.Float32s(), plain.Float32s()) {
		t.Error("the mixed rows differ from the float32 tables' rows")
	}
	rounded := m.Wte.Forward(x.Reshape(16)).Cast(frontend.BFloat16).Cast(frontend.Float32)
	if slices.Equal(rounded.Float32s(), m.Wte.Forward(x.Reshape(16)).Float32s()) {
		t.Fatal("the toy table is bf16-exact: the test sees no rounding")
	}

	// Distinct tokens: each row of the table is gathered at most once.
	n := 12
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(5*i+3) % int64(Toy.Vocab)
	}
	it := frontend.FromSlice(idx, n)
	r := nn.NewRNG(2).Normal(1, n, Toy.D)
	_, grads, err := frontend.ValueAndGrad(func(w *frontend.Tensor) *frontend.Tensor {
		return mixedRows(w, it, frontend.BFloat16).Mul(r).Sum(nil, false)
	}, 0).Call(m.Wte.Weight)
	if err != nil {
		t.Fatal(err)
	}
	g, rv := grads[0].Float32s(), r.Float32s()
	rb := r.Cast(frontend.BFloat16).Cast(frontend.Float32).Float32s()
	if slices.Equal(rb, rv) {
		t.Fatal("the upstream gradient is bf16-exact: the test sees no rounding")
	}
	row := map[int64]int{}
	for i, v := range idx {
		row[v] = i
	}
	for v := range Toy.Vocab {
		for j := range Toy.D {
			want := float32(0)
			if i, ok := row[int64(v)]; ok {
				want = rb[i*Toy.D+j]
			}
			if got := g[v*Toy.D+j]; got != want {
				t.Fatalf("gradient of table row %d [%d] = %g, want %g (the bf16 rows' gradient)", v, j, got, want)
			}
		}
	}
}
