// Package gpt2 is GPT-2 built with package nn: token and position
// embeddings, pre-norm blocks (causal attention through the frontend's
// attention op, a GELU MLP, residuals), a final layer norm, the output
// head tied to the token embedding, and the cross-entropy loss; greedy
// decoding with a KV cache. Parameter names follow the GPT-2 checkpoints
// (wte.weight, h.0.attn.c_attn.weight, …), so a safetensors file of one
// loads with nn/safetensors.
//
//	go run ./examples/models gpt2
package gpt2

import (
	"errors"
	"fmt"
	"sync"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
)

// Config is the architecture.
type Config struct {
	Vocab, Ctx, D, Heads, Layers int
	Seed                         uint64
}

// GPT2Small is the 124M model (vocabulary padded to 50304, as the
// benchmarks' anchors).
var GPT2Small = Config{Vocab: 50304, Ctx: 1024, D: 768, Heads: 12, Layers: 12, Seed: 1}

// Toy is a two-layer model the interpreter trains in seconds.
var Toy = Config{Vocab: 32, Ctx: 16, D: 16, Heads: 2, Layers: 2, Seed: 1}

// Model is GPT-2.
type Model struct {
	Wte *nn.Embedding `nn:"wte"`
	Wpe *nn.Embedding `nn:"wpe"`
	H   []*nn.GPT2Block
	LnF *nn.LayerNorm `nn:"ln_f"`
	cfg Config
	// autocast is the head's matmul dtype under MixedLoss (see
	// nn.Linear.Autocast); Float32 otherwise.
	autocast frontend.DType
}

// New returns the model for cfg with GPT-2's initialisation from
// cfg.Seed.
func New(cfg Config) *Model {
	g := nn.NewRNG(cfg.Seed)
	m := &Model{
		Wte: nn.NewEmbedding(g, cfg.Vocab, cfg.D, 0.02),
		Wpe: nn.NewEmbedding(g, cfg.Ctx, cfg.D, 0.01),
		LnF: nn.NewLayerNorm(cfg.D),
		cfg: cfg,
	}
	for range cfg.Layers {
		m.H = append(m.H, nn.NewGPT2Block(g, cfg.D, cfg.Heads, cfg.Layers))
	}
	return m
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// ParamCount returns the number of parameters of cfg's model (the tied
// head counted once) without building it.
func ParamCount(cfg Config) int {
	d := cfg.D
	block := 2*2*d + (d*3*d + 3*d) + (d*d + d) + (d*4*d + 4*d) + (4*d*d + d)
	return cfg.Vocab*d + cfg.Ctx*d + cfg.Layers*block + 2*d
}

// positions returns the int64 tensor [start, …, start+n-1] repeated
// reps times, made once for each (start, n, reps): a fresh tensor each
// call of a compiled function was a copy to the device each call (64 KB
// a training step at batch 8, sequence 1024).
func positions(start, n, reps int) *frontend.Tensor {
	k := [3]int{start, n, reps}
	if t, ok := positionTables.Load(k); ok {
		return t.(*frontend.Tensor)
	}
	p := make([]int64, 0, n*reps)
	for range reps {
		for i := range n {
			p = append(p, int64(start+i))
		}
	}
	t, _ := positionTables.LoadOrStore(k, frontend.FromSlice(p, n*reps))
	return t.(*frontend.Tensor)
}

// positionTables holds positions' tensors by (start, n, reps).
var positionTables sync.Map

// embed maps tokens [B, T] to rows [B·T, D] (the model keeps its
// activations as rows: 2-D matmuls run on tensor cores).
//
// Under MixedLoss the rows are the float32 tables' (PyTorch's autocast
// gathers in float32), with the gradient of rows gathered from the tables
// cast to the autocast dtype (mixedRows).
func (m *Model) embed(idx *frontend.Tensor) *frontend.Tensor {
	s := idx.Shape()
	tok, pos := idx.Reshape(s[0]*s[1]), positions(0, s[1], s[0])
	if dt := m.autocast; half(dt) {
		return mixedRows(m.Wte.Weight, tok, dt).Add(mixedRows(m.Wpe.Weight, pos, dt))
	}
	return m.Wte.Forward(tok).Add(m.Wpe.Forward(pos))
}

// carryScale scales the rounding error mixedRows carries through an
// integer: exact to 2⁻⁴⁰ (far below a float32 ulp of an embedding), and
// no int64 overflow for table values below 2³².
const carryScale = 1 << 40

// mixedRows returns the rows idx of the float32 table w with their
// float32 values and the gradient of the rows of w cast to dt: rows
// gathered in dt, widened, plus their rounding error (the float32 rows
// minus them, exact in float32) carried through an integer, which carries
// no gradient (as batch norm's shift k). The gather's gradient is a
// one-hot product, which the GPU lowering runs on tensor cores in bf16
// but not in float32; gathered in bf16 alone, the rows were rounded to
// bf16, a rounding PyTorch's autocast does not have (the s13 model rows:
// it made Strata's loss differ from PyTorch's 15 times more at the toy
// size, bench/NOTES.md).
func mixedRows(w, idx *frontend.Tensor, dt frontend.DType) *frontend.Tensor {
	low := (&nn.Embedding{Weight: castTo(w, dt)}).Forward(idx).Cast(w.DType())
	exact := (&nn.Embedding{Weight: w}).Forward(idx)
	f32 := func(v float64) *frontend.Tensor { return nn.Scalar(w.DType(), v) }
	carried := exact.Sub(low).Mul(f32(carryScale)).Cast(frontend.Int64).Cast(w.DType()).Mul(f32(1.0 / carryScale))
	return low.Add(carried)
}

// half reports whether dt is a 16-bit float type (an autocast dtype).
func half(dt frontend.DType) bool { return dt == frontend.BFloat16 || dt == frontend.Float16 }

// castTo returns x cast to dt, or x itself when it already is dt.
func castTo(x *frontend.Tensor, dt frontend.DType) *frontend.Tensor {
	if x.Err() != nil || x.DType() == dt {
		return x
	}
	return x.Cast(dt)
}

// head maps rows [N, D] to logits [N, Vocab] with the tied embedding.
func (m *Model) head(x *frontend.Tensor) *frontend.Tensor {
	x, w := m.LnF.Forward(x), m.Wte.Weight
	if dt := m.autocast; half(dt) {
		// The table cast as embed casts it (one cast after CSE), then
		// transposed: a product reads a transposed operand in place,
		// while a cast of the transposed table stored a transposed copy
		// (0.33 ms a training step on the H200).
		x, w = castTo(x, dt), castTo(w, dt)
	}
	return nn.MatMul2D(x, w.Transpose(1, 0))
}

// check validates tokens [B, T].
func (m *Model) check(idx *frontend.Tensor) *frontend.Tensor {
	if idx.Err() != nil {
		return idx
	}
	if idx.Rank() != 2 || idx.Shape()[1] > m.cfg.Ctx {
		return frontend.Failed(fmt.Errorf("gpt2: tokens of shape %v, want [B, T] with T ≤ %d", idx.Shape(), m.cfg.Ctx))
	}
	return nil
}

// rowLogits maps tokens [B, T] to logits [B·T, Vocab].
func (m *Model) rowLogits(idx *frontend.Tensor) *frontend.Tensor {
	if bad := m.check(idx); bad != nil {
		return bad
	}
	b, t := idx.Shape()[0], idx.Shape()[1]
	x := m.embed(idx)
	for _, blk := range m.H {
		x = blk.ForwardRows(x, b, t)
	}
	return m.head(x)
}

// Logits maps tokens idx [B, T] (T ≤ Ctx) to logits [B, T, Vocab].
func (m *Model) Logits(idx *frontend.Tensor) *frontend.Tensor {
	l := m.rowLogits(idx)
	if l.Err() != nil {
		return l
	}
	return l.Reshape(idx.Shape()[0], idx.Shape()[1], m.cfg.Vocab)
}

// LogitsAt is Logits for tokens idx [B, T] at positions pos (int64 [T],
// 0…T-1) written so that the sequence length may stay symbolic: compiled
// with T dynamic (DynamicPrefill), one graph serves every length. It reads
// no size of T as a Go int: the positions come in as an argument (a range
// made in the graph has a static size), and the blocks run
// nn.GPT2Block.ForwardRowsCausal (causal attention of the symbolic
// length: flash kernels on the GPU). The caller checks T ≤ Ctx
// (DynamicPrefill.Call does).
func (m *Model) LogitsAt(idx, pos *frontend.Tensor) *frontend.Tensor {
	if idx.Err() != nil {
		return idx
	}
	if pos.Err() != nil {
		return pos
	}
	if idx.Rank() != 2 || pos.Rank() != 1 {
		return frontend.Failed(fmt.Errorf("gpt2: tokens of shape %v and positions of shape %v, want [B, T] and [T]", idx.Shape(), pos.Shape()))
	}
	b, t := idx.Size(0), idx.Size(1)
	// [B, T, D] + [T, D], as rows [B·T, D]
	x := m.Wte.Forward(idx).Add(m.Wpe.Forward(pos)).Flatten(0, 1)
	for _, blk := range m.H {
		x = blk.ForwardRowsCausal(x, b, t)
	}
	return m.head(x).ReshapeS(b, t, frontend.Sz(m.cfg.Vocab))
}

// DynamicPrefill is the model's logits compiled once for every sequence
// length (as torch.compile(dynamic=True)): the tokens' dim 1 and the
// positions are marked dynamic, and LogitsAt keeps them symbolic.
type DynamicPrefill struct {
	m *Model
	c *nn.Compiled
	// positions holds [0, T) by T and placement, made once: a fresh
	// tensor each call was an allocation and a copy to the device each.
	mu        sync.Mutex
	positions map[posKey]*frontend.Tensor
}

// posKey names a positions tensor: its length and whether it is on the
// GPU.
type posKey struct {
	t   int
	gpu bool
}

// NewDynamicPrefill compiles m.LogitsAt with opts.
func NewDynamicPrefill(m *Model, opts frontend.Options) (*DynamicPrefill, error) {
	c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor {
		return []*frontend.Tensor{m.LogitsAt(in[0], in[1])}
	}, 2, opts)
	if err != nil {
		return nil, err
	}
	return &DynamicPrefill{m: m, c: c}, nil
}

// Compiled returns the compiled function (for its Stats).
func (p *DynamicPrefill) Compiled() *nn.Compiled { return p.c }

// Call returns the logits [B, T, Vocab] of tokens idx [B, T], T ≤ Ctx
// (it marks idx's dim 1 dynamic).
func (p *DynamicPrefill) Call(idx *frontend.Tensor) (*frontend.Tensor, error) {
	if bad := p.m.check(idx); bad != nil {
		return nil, bad.Err()
	}
	res, err := p.c.Call(frontend.MarkDynamic(idx, 1), frontend.MarkDynamic(p.positionsOf(idx), 0))
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// positionsOf returns the positions [0, T) of tokens idx [B, T], on the
// GPU when idx is.
func (p *DynamicPrefill) positionsOf(idx *frontend.Tensor) *frontend.Tensor {
	k := posKey{idx.Shape()[1], idx.IsGPU()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pos, ok := p.positions[k]; ok {
		return pos
	}
	pos := frontend.Arange(k.t)
	if k.gpu {
		pos = pos.ToGPU()
	}
	if pos.Err() == nil {
		if p.positions == nil {
			p.positions = map[posKey]*frontend.Tensor{}
		}
		p.positions[k] = pos
	}
	return pos
}

// Loss is the mean cross-entropy of predicting targets [B, T] from tokens
// [B, T] (in[0] and in[1]), computed in float32 or wider whatever the
// model's precision (as PyTorch's autocast computes cross_entropy).
func (m *Model) Loss(in ...*frontend.Tensor) []*frontend.Tensor {
	logits := m.rowLogits(in[0])
	if logits.Err() != nil {
		return []*frontend.Tensor{logits}
	}
	if dt := logits.DType(); dt == frontend.BFloat16 || dt == frontend.Float16 {
		logits = logits.Cast(frontend.Float32)
	}
	return []*frontend.Tensor{nn.CrossEntropy(logits, in[1].Reshape(logits.Shape()[0]), 0)}
}

// MixedLoss is Loss under PyTorch autocast's policy for dt (bf16 mixed
// precision), the model's float32 parameters the master weights: the
// matmuls (projections, MLP, the tied head) and attention take dt inputs
// (the weights cast in the graph, so their gradients come out float32),
// a product joined by a float32 bias is promoted back to float32, and the
// embeddings, residual stream, layer norms, GELU and the cross-entropy
// stay float32. The model is switched back to plain computation when the
// loss returns; m must not be traced concurrently meanwhile.
func (m *Model) MixedLoss(dt frontend.DType) func(in ...*frontend.Tensor) []*frontend.Tensor {
	return func(in ...*frontend.Tensor) []*frontend.Tensor {
		prev := m.autocast
		prevs := make([]frontend.DType, len(m.H))
		m.autocast = dt
		for i, b := range m.H {
			prevs[i] = b.SetAutocast(dt)
		}
		defer func() {
			m.autocast = prev
			for i, b := range m.H {
				b.SetAutocast(prevs[i])
			}
		}()
		return m.Loss(in...)
	}
}

// Decoder is a model with a KV cache per layer, for generation. The
// caches are its buffers: nn.Compile passes them into each compiled step
// and writes the step's updated caches back.
type Decoder struct {
	M      *Model
	Caches []*nn.KVCache
}

// NewDecoder returns m with empty caches for batch sequences of up to
// m's context length, in dtype dt.
func NewDecoder(m *Model, batch int, dt frontend.DType) *Decoder {
	d := &Decoder{M: m}
	for range m.cfg.Layers {
		d.Caches = append(d.Caches, nn.NewKVCache(dt, batch, m.cfg.Heads, m.cfg.Ctx, m.cfg.D/m.cfg.Heads))
	}
	return d
}

// Prefill runs the prompt idx [B, T] through the model, fills the caches
// and returns the logits of the last position [B, Vocab].
func (d *Decoder) Prefill(idx *frontend.Tensor) *frontend.Tensor {
	if bad := d.M.check(idx); bad != nil {
		return bad
	}
	b, t, dm := idx.Shape()[0], idx.Shape()[1], d.M.cfg.D
	x := d.M.embed(idx)
	for i, blk := range d.M.H {
		x = blk.PrefillRows(x, b, t, d.Caches[i])
	}
	last := x.Reshape(b, t, dm).Slice([]int{0, t - 1, 0}, []int{b, t, dm}, nil).Reshape(b, dm)
	return d.M.head(last)
}

// Decode runs one token per sequence tok [B, 1] at position pos (an int64
// scalar tensor) with the caches and returns the logits [B, Vocab].
func (d *Decoder) Decode(tok, pos *frontend.Tensor) *frontend.Tensor {
	x := d.M.Wte.Forward(tok.Reshape(tok.Shape()[0])).Add(d.M.Wpe.Forward(pos.Reshape(1)))
	for i, b := range d.M.H {
		x = b.DecodeRows(x, pos, d.Caches[i])
	}
	return d.M.head(x)
}

// Generator is greedy decoding with compiled prefill and decode steps;
// the next token is picked (argmax) inside the compiled step, on the
// device.
type Generator struct {
	d               *Decoder
	prefill, decode *nn.Compiled
}

// NewGenerator compiles d's prefill and decode steps with opts.
func NewGenerator(d *Decoder, opts frontend.Options) (*Generator, error) {
	pf, err := nn.Compile(d, func(in ...*frontend.Tensor) []*frontend.Tensor {
		logits := d.Prefill(in[0])
		return []*frontend.Tensor{logits.Argmax(1, true), logits}
	}, 1, opts)
	if err != nil {
		return nil, err
	}
	dc, err := nn.Compile(d, func(in ...*frontend.Tensor) []*frontend.Tensor {
		logits := d.Decode(in[0], in[1])
		return []*frontend.Tensor{logits.Argmax(1, true), logits}
	}, 2, opts)
	if err != nil {
		return nil, err
	}
	return &Generator{d: d, prefill: pf, decode: dc}, nil
}

// Steps returns the compiled prefill and decode steps (for their stats).
func (g *Generator) Steps() (prefill, decode *nn.Compiled) { return g.prefill, g.decode }

// Generate appends n greedy tokens to prompt [B, T] and returns them
// [B, n] with the logits of every generated token (n of [B, Vocab]). The
// decoding steps take over the caches' GPU memory (Tensor.Donate): a
// step that fails leaves the caches unusable until the next Generate's
// prefill writes them anew.
func (g *Generator) Generate(prompt *frontend.Tensor, n int) ([][]int64, []*frontend.Tensor, error) {
	if err := prompt.Err(); err != nil {
		return nil, nil, fmt.Errorf("gpt2: the prompt: %w", err)
	}
	if len(prompt.Shape()) != 2 || n < 1 {
		return nil, nil, fmt.Errorf("gpt2: Generate of %d tokens after a prompt of shape %v: want a prompt [B, T] and at least one token", n, prompt.Shape())
	}
	t := prompt.Shape()[1]
	if t+n > g.d.M.cfg.Ctx {
		return nil, nil, fmt.Errorf("gpt2: %d prompt tokens + %d new exceed the context of %d", t, n, g.d.M.cfg.Ctx)
	}
	res, err := g.prefill.Call(prompt)
	if err != nil {
		return nil, nil, fmt.Errorf("prefill: %w", err)
	}
	// The tokens stay where the backend put them (the GPU) until the end.
	tok, logits := res[0], []*frontend.Tensor{res[1]}
	toks := []*frontend.Tensor{tok}
	for i := 1; i < n; i++ {
		pos := frontend.FromSlice([]int64{int64(t + i - 1)}, []int{}...)
		// The step replaces every cache: the old ones are donated, so
		// that on the GPU the caches the previous step's CUDA graph
		// wrote are read where they are (runtime/exec/twin.go), never
		// copied.
		for _, c := range g.d.Caches {
			if err := errors.Join(c.K.Donate(), c.V.Donate()); err != nil {
				return nil, nil, fmt.Errorf("decode step %d: %w", i, err)
			}
		}
		res, err := g.decode.Call(tok, pos)
		if err != nil {
			return nil, nil, fmt.Errorf("decode step %d: %w", i, err)
		}
		tok = res[0]
		logits = append(logits, res[1])
		toks = append(toks, tok)
	}
	b := prompt.Shape()[0]
	out := make([][]int64, b)
	for _, step := range toks {
		vs := step.Int64s()
		if err := step.Err(); err != nil {
			return nil, nil, err
		}
		for s := range b {
			out[s] = append(out[s], vs[s])
		}
	}
	return out, logits, nil
}
