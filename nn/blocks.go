package nn

import (
	"math"

	"github.com/strata-ir/strata/frontend"
)

// ConvBN is a convolution followed by batch norm (the conv has no bias).
type ConvBN struct {
	Conv *Conv2d
	BN   *BatchNorm2d
}

// NewConvBN returns a k×k convolution from in to out channels with the
// given stride and padding k/2, and its batch norm.
func NewConvBN(g *RNG, in, out, k, stride int) *ConvBN {
	return &ConvBN{Conv: NewConv2d(g, in, out, k, ConvOptions{Stride: stride, Padding: k / 2}), BN: NewBatchNorm2d(out)}
}

// Forward applies the convolution and the batch norm.
func (c *ConvBN) Forward(x *frontend.Tensor) *frontend.Tensor { return c.BN.Forward(c.Conv.Forward(x)) }

// BasicBlock is ResNet-18/34's residual block: relu(bn(conv3x3(relu(
// bn(conv3x3(x))))) + shortcut(x)), the shortcut a strided 1×1 conv and
// batch norm where the shape changes.
type BasicBlock struct {
	C1, C2     *ConvBN
	Downsample *ConvBN // nil: identity
}

// NewBasicBlock returns a basic block from in to out channels.
func NewBasicBlock(g *RNG, in, out, stride int) *BasicBlock {
	b := &BasicBlock{C1: NewConvBN(g, in, out, 3, stride), C2: NewConvBN(g, out, out, 3, 1)}
	if stride != 1 || in != out {
		b.Downsample = NewConvBN(g, in, out, 1, stride)
	}
	return b
}

// Forward applies the block.
func (b *BasicBlock) Forward(x *frontend.Tensor) *frontend.Tensor {
	h := b.C2.Forward(b.C1.Forward(x).Relu())
	sc := x
	if b.Downsample != nil {
		sc = b.Downsample.Forward(x)
	}
	return h.Add(sc).Relu()
}

// Bottleneck is ResNet-50's residual block: 1×1 down to width, 3×3 (with
// the stride, as torchvision's v1.5), 1×1 up to 4·width, each with batch
// norm, ReLU between, the residual added before the last ReLU.
type Bottleneck struct {
	C1, C2, C3 *ConvBN
	Downsample *ConvBN // nil: identity
}

// Expansion is the ratio of a bottleneck's output channels to its width.
const Expansion = 4

// NewBottleneck returns a bottleneck block from in channels to
// width·Expansion.
func NewBottleneck(g *RNG, in, width, stride int) *Bottleneck {
	out := width * Expansion
	b := &Bottleneck{
		C1: NewConvBN(g, in, width, 1, 1),
		C2: NewConvBN(g, width, width, 3, stride),
		C3: NewConvBN(g, width, out, 1, 1),
	}
	if stride != 1 || in != out {
		b.Downsample = NewConvBN(g, in, out, 1, stride)
	}
	return b
}

// Forward applies the block.
func (b *Bottleneck) Forward(x *frontend.Tensor) *frontend.Tensor {
	h := b.C1.Forward(x).Relu()
	h = b.C2.Forward(h).Relu()
	h = b.C3.Forward(h)
	sc := x
	if b.Downsample != nil {
		sc = b.Downsample.Forward(x)
	}
	return h.Add(sc).Relu()
}

// SqueezeExcite scales each channel of x [N, C, H, W] by a gate computed
// from the channel averages: x · Gate(FC2(Act(FC1(mean over H, W)))),
// FC1 and FC2 1×1 convolutions with bias (EfficientNet's and
// MobileNetV3's block; PyTorch's torchvision.ops.SqueezeExcitation).
type SqueezeExcite struct {
	FC1, FC2  *Conv2d
	Act, Gate Layer
}

// NewSqueezeExcite returns a squeeze-excite block over c channels through
// squeeze channels, with the given activation and gate (ReLU and Sigmoid
// in torchvision's default, which a nil act or gate takes; SiLU and
// Sigmoid in EfficientNet; ReLU and Hardsigmoid in MobileNetV3).
func NewSqueezeExcite(g *RNG, c, squeeze int, act, gate Layer) *SqueezeExcite {
	if act == nil {
		act = ReLU{}
	}
	if gate == nil {
		gate = Sigmoid{}
	}
	return &SqueezeExcite{
		FC1: NewConv2d(g, c, squeeze, 1, ConvOptions{Bias: true}),
		FC2: NewConv2d(g, squeeze, c, 1, ConvOptions{Bias: true}),
		Act: act, Gate: gate,
	}
}

// Forward applies the block.
func (s *SqueezeExcite) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x); f != nil {
		return f
	}
	if x.Rank() != 4 {
		return errorf("SqueezeExcite: input of shape %v, want [N, C, H, W]", x.Shape())
	}
	w := s.Gate.Forward(s.FC2.Forward(s.Act.Forward(s.FC1.Forward(x.Mean([]int{2, 3}, true)))))
	return x.Mul(w)
}

// InvertedResidual is MobileNetV2's block (and, with a squeeze-excite and
// another activation, MobileNetV3's and EfficientNet's MBConv): a 1×1
// expansion to Expand·in channels (absent for Expand 1), a k×k depthwise
// convolution with the stride, an optional squeeze-excite, and a linear
// 1×1 projection, each convolution with batch norm; the activation after
// the first two; the input added where the shape is kept.
type InvertedResidual struct {
	Expand    *ConvBN // nil: no expansion
	Depthwise *ConvBN
	SE        *SqueezeExcite // nil: none
	Project   *ConvBN
	Act       Layer
	Residual  bool
}

// InvertedResidualOptions are an InvertedResidual's settings.
type InvertedResidualOptions struct {
	// Expand is the hidden width's ratio to the input's (0 means 1);
	// Kernel the depthwise kernel (0 means 3); Stride its stride (0
	// means 1).
	Expand, Kernel, Stride int
	// Act is the activation (nil: ReLU6, MobileNetV2's).
	Act Layer
	// SE, when set, is the squeeze-excite block after the depthwise
	// convolution (its channels Expand·in).
	SE *SqueezeExcite
}

// NewInvertedResidual returns an inverted residual block from in to out
// channels.
func NewInvertedResidual(g *RNG, in, out int, o InvertedResidualOptions) *InvertedResidual {
	expand, k, stride := max(o.Expand, 1), o.Kernel, max(o.Stride, 1)
	if k == 0 {
		k = 3
	}
	hidden := in * expand
	b := &InvertedResidual{SE: o.SE, Act: o.Act, Residual: stride == 1 && in == out}
	if b.Act == nil {
		b.Act = ReLU6{}
	}
	if expand != 1 {
		b.Expand = NewConvBN(g, in, hidden, 1, 1)
	}
	b.Depthwise = &ConvBN{
		Conv: NewConv2d(g, hidden, hidden, k, ConvOptions{Stride: stride, Padding: k / 2, Groups: hidden}),
		BN:   NewBatchNorm2d(hidden),
	}
	b.Project = NewConvBN(g, hidden, out, 1, 1)
	return b
}

// Forward applies the block.
func (b *InvertedResidual) Forward(x *frontend.Tensor) *frontend.Tensor {
	h := x
	if b.Expand != nil {
		h = b.Act.Forward(b.Expand.Forward(h))
	}
	h = b.Act.Forward(b.Depthwise.Forward(h))
	if b.SE != nil {
		h = b.SE.Forward(h)
	}
	h = b.Project.Forward(h)
	if b.Residual {
		return h.Add(x)
	}
	return h
}

// CausalSelfAttention is GPT-2's attention: one [d, 3d] projection to
// queries, keys and values, causal scaled dot-product attention over
// Heads heads (the frontend's attention op: the flash kernel on the GPU),
// and an output projection. Field names follow GPT-2's checkpoints.
type CausalSelfAttention struct {
	CAttn *Linear `nn:"c_attn"`
	CProj *Linear `nn:"c_proj"`
	Heads int
	// Autocast, when BFloat16 or Float16, is the dtype attention runs in
	// (queries, keys and values are cast to it, as PyTorch's autocast
	// runs scaled_dot_product_attention); otherwise attention runs in
	// its inputs' dtype. The projections have their own (Linear.Autocast).
	Autocast frontend.DType
}

// attend is causal attention of q, k, v [B, H, T, dh] with o, in
// a.Autocast where that is a 16-bit float type.
func (a *CausalSelfAttention) attend(q, k, v *frontend.Tensor, o frontend.AttentionOptions) *frontend.Tensor {
	if half(a.Autocast) {
		q, k, v = castTo(q, a.Autocast), castTo(k, a.Autocast), castTo(v, a.Autocast)
	}
	return frontend.Attention(q, k, v, o)
}

// NewCausalSelfAttention returns an attention layer of width d, weights
// drawn from N(0, 0.02²) as GPT-2 does (the output projection scaled by
// 1/√(2·layers)), biases zero.
func NewCausalSelfAttention(g *RNG, d, heads, layers int) *CausalSelfAttention {
	return &CausalSelfAttention{
		CAttn: &Linear{Weight: g.Normal(0.02, d, 3*d), Bias: frontend.Zeros(frontend.Float32, 3*d)},
		CProj: &Linear{Weight: g.Normal(0.02/math.Sqrt(2*float64(layers)), d, d), Bias: frontend.Zeros(frontend.Float32, d)},
		Heads: heads,
	}
}

// checkRows checks x [B·T, d] and returns d.
func (a *CausalSelfAttention) checkRows(x *frontend.Tensor, b, t int) (int, *frontend.Tensor) {
	if f := firstErr(x); f != nil {
		return 0, f
	}
	if x.Rank() != 2 || x.Shape()[0] != b*t {
		return 0, errorf("CausalSelfAttention: input of shape %v, want [%d·%d, d]", x.Shape(), b, t)
	}
	d := x.Shape()[1]
	if a.Heads < 1 || d%a.Heads != 0 {
		return 0, errorf("CausalSelfAttention: width %d is not a multiple of %d heads", d, a.Heads)
	}
	return d, nil
}

// qkv splits the projection of the rows x [B·T, d] into q, k, v
// [B, H, T, d/H].
func (a *CausalSelfAttention) qkv(x *frontend.Tensor, b, t int) (q, k, v *frontend.Tensor, bad *frontend.Tensor) {
	d, bad := a.checkRows(x, b, t)
	if bad != nil {
		return nil, nil, nil, bad
	}
	h := a.CAttn.Forward(x)
	if h.Err() != nil {
		return nil, nil, nil, h
	}
	// [B, T, 3, H, dh] → [3, B, H, T, dh]
	h = h.Reshape(b, t, 3, a.Heads, d/a.Heads).Transpose(2, 0, 3, 1, 4)
	part := func(i int) *frontend.Tensor {
		return h.Slice([]int{i, 0, 0, 0, 0}, []int{i + 1, b, a.Heads, t, d / a.Heads}, nil).Reshape(b, a.Heads, t, d/a.Heads)
	}
	return part(0), part(1), part(2), nil
}

// merge maps attention output [B, H, T, dh] back to rows [B·T, d] and
// projects them.
func (a *CausalSelfAttention) merge(o *frontend.Tensor) *frontend.Tensor {
	s := o.Shape()
	return a.CProj.Forward(o.Transpose(0, 2, 1, 3).Reshape(s[0]*s[2], s[1]*s[3]))
}

// Forward applies causal self-attention to x [B, T, d].
func (a *CausalSelfAttention) Forward(x *frontend.Tensor) *frontend.Tensor {
	return asSeq(x, func(rows *frontend.Tensor, b, t int) *frontend.Tensor { return a.ForwardRows(rows, b, t) })
}

// ForwardRows applies causal self-attention to the rows x [B·T, d] of b
// sequences of t tokens. Models keep their activations as rows: a 2-D
// matmul is what the GPU lowering runs on tensor cores.
func (a *CausalSelfAttention) ForwardRows(x *frontend.Tensor, b, t int) *frontend.Tensor {
	q, k, v, bad := a.qkv(x, b, t)
	if bad != nil {
		return bad
	}
	return a.merge(a.attend(q, k, v, frontend.AttentionOptions{Causal: true}))
}

// ForwardRowsCausal is ForwardRows for a sequence length t that may be
// symbolic (frontend.Size, in a graph compiled for every length).
// Nothing reads t as a Go int, so the graph stays dynamic: q, k and v
// are gathered from c_attn's product rather than sliced (a slice has
// static sizes). Attention keeps its causal flag, which the GPU runs as
// a flash kernel taking the length at run time, and graph-decompose
// expands with a mask of the symbolic length.
func (a *CausalSelfAttention) ForwardRowsCausal(x *frontend.Tensor, b, t frontend.Size) *frontend.Tensor {
	return a.forwardRowsSized(x, b, t, frontend.AttentionOptions{Causal: true})
}

// ForwardRowsMasked is ForwardRowsCausal with the mask keep instead of
// the causal flag: Bool [1, 1, T, T], true where query i may see key j
// (CausalMask builds the causal one from positions; a padding mask is
// another). A masked attention runs decomposed, its scores in memory.
func (a *CausalSelfAttention) ForwardRowsMasked(x *frontend.Tensor, b, t frontend.Size, keep *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(keep); f != nil {
		return f
	}
	return a.forwardRowsSized(x, b, t, frontend.AttentionOptions{Mask: keep})
}

// forwardRowsSized is ForwardRowsCausal and ForwardRowsMasked, with
// attention's options o.
func (a *CausalSelfAttention) forwardRowsSized(x *frontend.Tensor, b, t frontend.Size, o frontend.AttentionOptions) *frontend.Tensor {
	if f := firstErr(x, a.CAttn.Weight, a.CAttn.Bias); f != nil {
		return f
	}
	d := a.CAttn.Weight.Dim(0)
	if x.Rank() != 2 || x.Dim(1) != d {
		return errorf("CausalSelfAttention: input of shape %v, want [B·T, %d]", x.Shape(), d)
	}
	if a.Heads < 1 || d%a.Heads != 0 || a.CAttn.Weight.Dim(1) != 3*d {
		return errorf("CausalSelfAttention: width %d, c_attn %v and %d heads do not fit", d, a.CAttn.Weight.Shape(), a.Heads)
	}
	dh := d / a.Heads
	// One c_attn product [B·T, 3d] seen as [3, B, H, T, dh]; q, k and v
	// are gathered at one constant index of its first dim (a slice would
	// need T's static size): copies to [B, H, T, dh] that graph-fuse
	// merges into one kernel.
	qkv := a.CAttn.Forward(x).ReshapeS(b, t, frontend.Sz(3), frontend.Sz(a.Heads), frontend.Sz(dh)).Transpose(2, 0, 3, 1, 4)
	part := func(i int) *frontend.Tensor {
		return qkv.Gather(index(int64(i)), 0).ReshapeS(b, frontend.Sz(a.Heads), t, frontend.Sz(dh))
	}
	y := a.attend(part(0), part(1), part(2), o)
	return a.CProj.Forward(y.Transpose(0, 2, 1, 3).ReshapeS(b.Mul(t), frontend.Sz(d)))
}

// CausalMask returns the Bool mask [1, 1, T, T] that keeps key j for
// query i when pos[j] ≤ pos[i], from the int64 positions pos [T]: with
// pos 0…T-1 it is the causal mask, built from an argument so that T may
// stay symbolic.
func CausalMask(pos *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(pos); f != nil {
		return f
	}
	if pos.Rank() != 1 {
		return errorf("CausalMask: positions of shape %v, want [T]", pos.Shape())
	}
	t, one := pos.Size(0), frontend.Sz(1)
	return pos.ReshapeS(one, one, one, t).Cmp("le", pos.ReshapeS(one, one, t, one))
}

// asSeq applies f, a function of rows [B·T, d], to x [B, T, d].
func asSeq(x *frontend.Tensor, f func(rows *frontend.Tensor, b, t int) *frontend.Tensor) *frontend.Tensor {
	if e := firstErr(x); e != nil {
		return e
	}
	if x.Rank() != 3 {
		return errorf("input of shape %v, want [B, T, d]", x.Shape())
	}
	s := x.Shape()
	y := f(x.Reshape(s[0]*s[1], s[2]), s[0], s[1])
	if y.Err() != nil {
		return y
	}
	return y.Reshape(s[0], s[1], y.Shape()[1])
}

// KVCache holds one layer's keys and values [B, H, MaxLen, dh] for
// decoding; positions at or past the current length hold zeros.
type KVCache struct {
	K, V *frontend.Tensor `nn:"buffer"`
	// positions is [0, 1, …, MaxLen-1], made once: a compiled decoding
	// step then reads the same tensor every call (one upload to the
	// device, none per step and layer).
	positions *frontend.Tensor
}

// NewKVCache returns an empty cache.
func NewKVCache(dt frontend.DType, batch, heads, maxLen, headDim int) *KVCache {
	return &KVCache{K: frontend.Zeros(dt, batch, heads, maxLen, headDim), V: frontend.Zeros(dt, batch, heads, maxLen, headDim),
		positions: classes(maxLen)}
}

// slots returns the cache's positions [0, 1, …, maxLen-1], made on first
// use when the cache was not built by NewKVCache.
func (c *KVCache) slots(maxLen int) *frontend.Tensor {
	if c.positions == nil || c.positions.Shape()[0] != maxLen {
		c.positions = classes(maxLen)
	}
	return c.positions
}

// Prefill applies causal attention to x [B, T, d] (the prompt, positions
// 0…T-1) and stores its keys and values in the cache's first T positions.
func (a *CausalSelfAttention) Prefill(x *frontend.Tensor, c *KVCache) *frontend.Tensor {
	return asSeq(x, func(rows *frontend.Tensor, b, t int) *frontend.Tensor { return a.PrefillRows(rows, b, t, c) })
}

// PrefillRows is Prefill on rows [B·T, d].
func (a *CausalSelfAttention) PrefillRows(x *frontend.Tensor, b, t int, c *KVCache) *frontend.Tensor {
	q, k, v, bad := a.qkv(x, b, t)
	if bad != nil {
		return bad
	}
	maxLen := c.K.Shape()[2]
	if t > maxLen {
		return errorf("CausalSelfAttention: prompt of %d tokens does not fit a cache of %d", t, maxLen)
	}
	pad := func(z *frontend.Tensor) *frontend.Tensor {
		return z.Pad([]int{0, 0, 0, 0}, []int{0, 0, maxLen - t, 0}, 0)
	}
	c.K, c.V = pad(k), pad(v)
	return a.merge(a.attend(q, k, v, frontend.AttentionOptions{Causal: true}))
}

// Decode applies attention to one new token x [B, 1, d] at position pos
// (an int64 scalar tensor, so that every step runs the same compiled
// graph): it writes the token's key and value into the cache at pos and
// attends over positions 0…pos.
func (a *CausalSelfAttention) Decode(x, pos *frontend.Tensor, c *KVCache) *frontend.Tensor {
	return asSeq(x, func(rows *frontend.Tensor, b, t int) *frontend.Tensor {
		if t != 1 {
			return errorf("CausalSelfAttention.Decode: %d tokens, want 1", t)
		}
		return a.DecodeRows(rows, pos, c)
	})
}

// DecodeRows is Decode on rows [B, d], one token per sequence.
func (a *CausalSelfAttention) DecodeRows(x, pos *frontend.Tensor, c *KVCache) *frontend.Tensor {
	if f := firstErr(x, pos, c.K, c.V); f != nil {
		return f
	}
	q, k, v, bad := a.qkv(x, x.Shape()[0], 1)
	if bad != nil {
		return bad
	}
	maxLen := c.K.Shape()[2]
	slots := c.slots(maxLen)
	at := slots.Cmp("eq", pos)          // [maxLen]
	slot := at.Reshape(1, 1, maxLen, 1) // where the new key goes
	keep := slots.Cmp("le", pos)        // positions attended to
	c.K = frontend.Where(slot, k, c.K)  // k broadcasts over maxLen
	c.V = frontend.Where(slot, v, c.V)
	o := frontend.Attention(q, c.K, c.V, frontend.AttentionOptions{Mask: keep.Reshape(1, 1, 1, maxLen)})
	return a.merge(o)
}

// MLP is GPT-2's feed-forward layer: c_proj(gelu_tanh(c_fc(x))).
type MLP struct {
	CFc   *Linear `nn:"c_fc"`
	CProj *Linear `nn:"c_proj"`
}

// Forward applies the MLP.
func (m *MLP) Forward(x *frontend.Tensor) *frontend.Tensor {
	return m.CProj.Forward(m.CFc.Forward(x).Gelu("tanh"))
}

// GPT2Block is a pre-norm transformer block: x + attn(ln_1(x)), then
// x + mlp(ln_2(x)).
type GPT2Block struct {
	Ln1  *LayerNorm `nn:"ln_1"`
	Attn *CausalSelfAttention
	Ln2  *LayerNorm `nn:"ln_2"`
	MLP  *MLP
}

// NewGPT2Block returns a block of width d with heads heads, initialised as
// GPT-2 (layers is the model's depth, for the residual projections'
// scale).
func NewGPT2Block(g *RNG, d, heads, layers int) *GPT2Block {
	return &GPT2Block{
		Ln1:  NewLayerNorm(d),
		Attn: NewCausalSelfAttention(g, d, heads, layers),
		Ln2:  NewLayerNorm(d),
		MLP: &MLP{
			CFc:   &Linear{Weight: g.Normal(0.02, d, 4*d), Bias: frontend.Zeros(frontend.Float32, 4*d)},
			CProj: &Linear{Weight: g.Normal(0.02/math.Sqrt(2*float64(layers)), 4*d, d), Bias: frontend.Zeros(frontend.Float32, d)},
		},
	}
}

// SetAutocast sets the Autocast dtype of the block's projections and
// attention to dt (PyTorch autocast's policy for the block: matmuls and
// attention in dt, layer norms, GELU, bias adds and the residual stream
// in float32 for float32 parameters and input) and returns the previous
// one. A 16-bit dt turns autocast on, anything else off.
func (b *GPT2Block) SetAutocast(dt frontend.DType) frontend.DType {
	prev := b.Attn.Autocast
	b.Attn.Autocast = dt
	for _, l := range []*Linear{b.Attn.CAttn, b.Attn.CProj, b.MLP.CFc, b.MLP.CProj} {
		l.Autocast = dt
	}
	return prev
}

// Forward applies the block to x [B, T, d].
func (b *GPT2Block) Forward(x *frontend.Tensor) *frontend.Tensor {
	return asSeq(x, b.ForwardRows)
}

// ForwardRows applies the block to the rows x [B·T, d] of bs sequences
// of t tokens.
func (b *GPT2Block) ForwardRows(x *frontend.Tensor, bs, t int) *frontend.Tensor {
	x = x.Add(b.Attn.ForwardRows(b.Ln1.Forward(x), bs, t))
	return x.Add(b.MLP.Forward(b.Ln2.Forward(x)))
}

// ForwardRowsCausal is ForwardRows with a sequence length that may be
// symbolic (see CausalSelfAttention.ForwardRowsCausal).
func (b *GPT2Block) ForwardRowsCausal(x *frontend.Tensor, bs, t frontend.Size) *frontend.Tensor {
	x = x.Add(b.Attn.ForwardRowsCausal(b.Ln1.Forward(x), bs, t))
	return x.Add(b.MLP.Forward(b.Ln2.Forward(x)))
}

// ForwardRowsMasked is ForwardRows with a sequence length that may be
// symbolic and the attention mask keep (see
// CausalSelfAttention.ForwardRowsMasked).
func (b *GPT2Block) ForwardRowsMasked(x *frontend.Tensor, bs, t frontend.Size, keep *frontend.Tensor) *frontend.Tensor {
	x = x.Add(b.Attn.ForwardRowsMasked(b.Ln1.Forward(x), bs, t, keep))
	return x.Add(b.MLP.Forward(b.Ln2.Forward(x)))
}

// Prefill is Forward that also fills the layer's cache.
func (b *GPT2Block) Prefill(x *frontend.Tensor, c *KVCache) *frontend.Tensor {
	return asSeq(x, func(rows *frontend.Tensor, bs, t int) *frontend.Tensor { return b.PrefillRows(rows, bs, t, c) })
}

// PrefillRows is Prefill on rows [B·T, d].
func (b *GPT2Block) PrefillRows(x *frontend.Tensor, bs, t int, c *KVCache) *frontend.Tensor {
	x = x.Add(b.Attn.PrefillRows(b.Ln1.Forward(x), bs, t, c))
	return x.Add(b.MLP.Forward(b.Ln2.Forward(x)))
}

// Decode is Forward for one token at position pos, with the layer's cache.
func (b *GPT2Block) Decode(x, pos *frontend.Tensor, c *KVCache) *frontend.Tensor {
	return asSeq(x, func(rows *frontend.Tensor, bs, t int) *frontend.Tensor {
		if t != 1 {
			return errorf("GPT2Block.Decode: %d tokens, want 1", t)
		}
		return b.DecodeRows(rows, pos, c)
	})
}

// DecodeRows is Decode on rows [B, d].
func (b *GPT2Block) DecodeRows(x, pos *frontend.Tensor, c *KVCache) *frontend.Tensor {
	x = x.Add(b.Attn.DecodeRows(b.Ln1.Forward(x), pos, c))
	return x.Add(b.MLP.Forward(b.Ln2.Forward(x)))
}
