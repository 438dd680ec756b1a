package nn

import (
	"math"

	"github.com/strata-ir/strata/frontend"
)

// Layer is a module with one input and one output.
type Layer interface {
	Forward(x *frontend.Tensor) *frontend.Tensor
}

// Linear is y = x·Weight + Bias. Weight is [in, out]: the transpose of
// torch.nn.Linear's weight (and the layout of GPT-2's checkpoints), so
// that the product needs no transpose.
type Linear struct {
	Weight *frontend.Tensor // [in, out]
	Bias   *frontend.Tensor // [out], or nil
	// Autocast, when BFloat16 or Float16, is the dtype the product runs
	// in, as under PyTorch's autocast: x and Weight are cast to it, and a
	// float32 Bias promotes the product back to float32 before it is
	// added. Any other value (the zero value) computes in the inputs'
	// dtypes. GPT2Block.SetAutocast sets it.
	Autocast frontend.DType
}

// NewLinear returns a Linear layer initialised as PyTorch does: weight
// and bias uniform in ±1/√in.
func NewLinear(g *RNG, in, out int, bias bool) *Linear {
	l := &Linear{Weight: g.kaiming(in, in, out)}
	if bias {
		l.Bias = g.kaiming(in, out)
	}
	return l
}

// Forward maps x [..., in] to [..., out].
func (l *Linear) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x, l.Weight, l.Bias); f != nil {
		return f
	}
	// Only the last size is read (static in a model whose sequence
	// length is symbolic: reading the others would specialize the graph).
	in := l.Weight.Dim(0)
	if x.Rank() == 0 || x.Dim(-1) != in {
		return errorf("Linear: input of shape %v, want [..., %d]", x.Shape(), in)
	}
	return matmul2D(x, l.Weight, l.Bias, l.Autocast)
}

// matmul2D returns x·w (+ b) for x [..., K] and w [K, N], as one 2-D
// product of x's rows flattened to [rows, K]: a plain 2-D matmul is what
// the GPU lowering hands to cuBLASLt or its tensor-core kernels (a batched
// matmul with a broadcast weight is not).
// Sizes stay symbolic where they are (frontend.Size): a dynamic sequence
// length is not specialized. With amp a 16-bit float type (autocast) the
// product runs in amp, and a float32 b promotes it to float32 (see
// Linear.Autocast). A bias of a 16-bit product's own dtype joins the sum
// before its one rounding (frontend.MatMulBias), as PyTorch's linear adds
// it in cuBLASLt's epilogue: added after the rounded product, it would be
// rounded twice.
func matmul2D(x, w, b *frontend.Tensor, amp frontend.DType) *frontend.Tensor {
	r := x.Rank()
	var lead []frontend.Size
	if r > 2 {
		lead = x.Sizes()[:r-1]
		x = x.Flatten(0, r-2)
	}
	if half(amp) {
		x, w = castTo(x, amp), castTo(w, amp)
	}
	var y *frontend.Tensor
	switch {
	case b != nil && half(x.DType()) && x.DType() == w.DType() && b.DType() == x.DType() && b.Rank() == 1:
		y = frontend.MatMulBias(x, w, b)
	case b != nil:
		y = x.MatMul(w)
		if half(amp) && b.DType() == frontend.Float32 {
			y = y.Cast(frontend.Float32)
		}
		y = y.Add(b)
	default:
		y = x.MatMul(w)
	}
	if r > 2 {
		y = y.ReshapeS(append(lead, w.Size(1))...)
	}
	return y
}

// MatMul2D returns x·w for x [..., K] and w [K, N] as one 2-D product
// (see Linear), the form the GPU lowering runs on tensor cores.
func MatMul2D(x, w *frontend.Tensor) *frontend.Tensor { return matmul2D(x, w, nil, frontend.Float32) }

// castTo returns x cast to dt, or x itself when it already is dt.
func castTo(x *frontend.Tensor, dt frontend.DType) *frontend.Tensor {
	if x.DType() == dt {
		return x
	}
	return x.Cast(dt)
}

// Embedding maps int64 indices to rows of Weight [num, dim].
type Embedding struct {
	Weight *frontend.Tensor
}

// NewEmbedding returns an embedding with rows drawn from N(0, std²)
// (PyTorch: std 1; GPT-2: 0.02).
func NewEmbedding(g *RNG, num, dim int, std float64) *Embedding {
	return &Embedding{Weight: g.Normal(std, num, dim)}
}

// Forward maps indices of any shape to [..., dim].
func (e *Embedding) Forward(idx *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(idx, e.Weight); f != nil {
		return f
	}
	if idx.DType() != frontend.Int64 && idx.DType() != frontend.Int32 {
		return errorf("Embedding: indices are %v, want int64 or int32", idx.DType())
	}
	return e.Weight.Gather(idx, 0)
}

// LayerNorm normalizes over the last dim and applies Weight and Bias. A
// nil Bias is none (PyTorch's bias=False); nil Weight and Bias are
// PyTorch's elementwise_affine=False.
type LayerNorm struct {
	Weight, Bias *frontend.Tensor
	Eps          float64
}

// NewLayerNorm returns a layer norm over dim features (weight 1, bias 0,
// eps 1e-5).
func NewLayerNorm(dim int) *LayerNorm {
	return &LayerNorm{Weight: frontend.Ones(frontend.Float32, dim), Bias: frontend.Zeros(frontend.Float32, dim), Eps: 1e-5}
}

// Forward normalizes x [..., dim].
func (l *LayerNorm) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x, l.Weight, l.Bias); f != nil {
		return f
	}
	if x.Rank() == 0 {
		return errorf("LayerNorm: input of shape %v, want [..., features]", x.Shape())
	}
	d := x.Dim(-1)
	w, b := l.Weight, l.Bias
	for _, p := range []*frontend.Tensor{w, b} {
		if p != nil && (p.Rank() != 1 || p.Dim(0) != d) {
			return errorf("LayerNorm: input of shape %v, weight or bias of shape %v: want [..., n] and [n]", x.Shape(), p.Shape())
		}
	}
	if w == nil {
		w = frontend.Full(x.DType(), 1, d)
	}
	if b == nil {
		b = frontend.Full(w.DType(), 0, d)
	}
	return x.LayerNorm(w, b, -1, l.Eps)
}

// ConvOptions are Conv2d's optional settings; zero values are PyTorch's
// defaults (stride 1, padding 0, dilation 1, groups 1, no bias).
type ConvOptions struct {
	Stride, Padding, Dilation int
	Groups                    int
	Bias                      bool
}

// Conv2d is a 2-D convolution of NCHW input with square kernels.
type Conv2d struct {
	Weight                            *frontend.Tensor // [out, in/groups, k, k]
	Bias                              *frontend.Tensor // [out], or nil
	Stride, Padding, Dilation, Groups int
}

// NewConv2d returns a convolution from in to out channels with a k×k
// kernel, initialised as PyTorch does (uniform in ±1/√fan-in).
func NewConv2d(g *RNG, in, out, k int, o ConvOptions) *Conv2d {
	// Zeros are the defaults; negative values stay for Forward to
	// report.
	for _, v := range []*int{&o.Groups, &o.Stride, &o.Dilation} {
		if *v == 0 {
			*v = 1
		}
	}
	fanIn := in / max(o.Groups, 1) * k * k
	c := &Conv2d{
		Weight: g.kaiming(fanIn, out, in/max(o.Groups, 1), k, k),
		Stride: o.Stride, Padding: o.Padding, Dilation: o.Dilation, Groups: o.Groups,
	}
	if o.Bias {
		c.Bias = g.kaiming(fanIn, out)
	}
	return c
}

// OutSize returns the output size of a convolution or pooling window
// over n elements (PyTorch's floor rule).
func OutSize(n, k, stride, padding, dilation int) int {
	return (n+2*padding-dilation*(k-1)-1)/stride + 1
}

// Forward convolves x [N, C, H, W].
func (c *Conv2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x, c.Weight, c.Bias); f != nil {
		return f
	}
	ws := c.Weight.Shape()
	if c.Stride < 0 || c.Dilation < 0 || c.Groups < 0 {
		return errorf("Conv2d: stride %d, dilation %d, groups %d: want each ≥ 1 (0 is the default 1)", c.Stride, c.Dilation, c.Groups)
	}
	groups := max(c.Groups, 1)
	if x.Rank() != 4 {
		return errorf("Conv2d: input of shape %v, want [N, C, H, W]", x.Shape())
	}
	xs := x.Shape()
	if xs[1] != ws[1]*groups {
		return errorf("Conv2d: input has %d channels, the layer takes %d", xs[1], ws[1]*groups)
	}
	stride, dil := max(c.Stride, 1), max(c.Dilation, 1)
	for i, n := range xs[2:] {
		k := ws[2+i]
		if k < 1 { // the graph op would take it, as a window of nothing
			return errorf("Conv2d: kernel %dx%d has an empty dim, want ≥ 1", ws[2], ws[3])
		}
		if ext := dil*(k-1) + 1; n+2*c.Padding < ext {
			return errorf("Conv2d: kernel extent %d is larger than the padded input (%d + 2·%d) in dim %d", ext, n, c.Padding, 2+i)
		}
	}
	return frontend.Conv2D(x, c.Weight, c.Bias, frontend.Conv2DOptions{
		Strides: []int{stride, stride}, Padding: []int{c.Padding, c.Padding},
		Dilations: []int{dil, dil}, Groups: groups,
	})
}

// BatchNorm2d normalizes each channel of NCHW input. In training mode it
// uses the batch's mean and (biased) variance and updates RunningMean and
// RunningVar in place: running = (1-Momentum)·running + Momentum·batch,
// with the unbiased variance, as PyTorch does. In evaluation mode it uses
// the running statistics.
type BatchNorm2d struct {
	// Weight and Bias [C] stay float32 under Autocast (mixed applies
	// them in float32).
	Weight, Bias            *frontend.Tensor `nn:"float32"`
	RunningMean, RunningVar *frontend.Tensor `nn:"buffer"`
	Eps, Momentum           float64
	Training                bool
}

// NewBatchNorm2d returns a batch norm over c channels (weight 1, bias 0,
// running mean 0 and variance 1, eps 1e-5, momentum 0.1), in training
// mode.
func NewBatchNorm2d(c int) *BatchNorm2d {
	return &BatchNorm2d{
		Weight: frontend.Ones(frontend.Float32, c), Bias: frontend.Zeros(frontend.Float32, c),
		RunningMean: frontend.Zeros(frontend.Float32, c), RunningVar: frontend.Ones(frontend.Float32, c),
		Eps: 1e-5, Momentum: 0.1, Training: true,
	}
}

// Forward normalizes x [N, C, H, W].
func (b *BatchNorm2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x, b.Weight, b.Bias, b.RunningMean, b.RunningVar); f != nil {
		return f
	}
	c := b.Weight.Shape()[0]
	if x.Rank() != 4 {
		return errorf("BatchNorm2d: input of rank %d (shape %v), want [N, C, H, W]", x.Rank(), x.Shape())
	}
	xs := x.Shape()
	if xs[1] != c {
		return errorf("BatchNorm2d: input has %d channels, the layer has %d", xs[1], c)
	}
	if half(x.DType()) && b.RunningMean.DType() == frontend.Float32 {
		return b.mixed(x)
	}
	if b.Training {
		return b.train(x)
	}
	// y = x·s + t with s = w/√(var+eps), t = b - mean·s: one multiply-add
	// over x (the affine form a conv epilogue can absorb).
	per := func(t *frontend.Tensor) *frontend.Tensor { return t.Reshape(1, c, 1, 1) }
	if half(x.DType()) {
		// A bf16 or f16 layer (nn.Cast): s and t from the float32 values
		// of its parameters, and x·s + t rounded once, as PyTorch's
		// kernel computes; in the input's type they were rounded on the
		// way and twice at the end (resnet50_infer's logits 1.39× as far
		// from float32 as PyTorch's, session 13). A convolution's
		// epilogue still absorbs it (the same launches lowered).
		f := func(t *frontend.Tensor) *frontend.Tensor { return castTo(t, frontend.Float32) }
		s := f(b.RunningVar).Add(Scalar(frontend.Float32, b.Eps)).Rsqrt().Mul(f(b.Weight))
		t := f(b.Bias).Sub(f(b.RunningMean).Mul(s))
		return f(x).Mul(per(s)).Add(per(t)).Cast(x.DType())
	}
	s := b.RunningVar.Add(full(x, b.Eps)).Rsqrt().Mul(b.Weight)
	t := b.Bias.Sub(b.RunningMean.Mul(s))
	return x.Mul(per(s)).Add(per(t))
}

// train is Forward in training mode: x normalized with its batch
// statistics, which update the running ones.
//
// The statistics are those of d = x − k, in one pass over x: s1 = E[d],
// s2 = E[d²], var = s2 − s1². k is the batch mean (a pass of its own)
// rounded to a multiple of 2⁻²⁰ through an integer, so that s1 is that
// rounding's residue and s2 − s1² does not cancel, and so that k carries
// no gradient: y = d·a + t with a = w/√(var+eps) and t = b − s1·a per
// channel, and the gradient is two sums over the batch (Σ dy and Σ dy·d,
// one kernel) and one pass computing dx. With the two-pass form (or k
// the mean itself) the gradient has a further sum of dx's first part
// over the batch, a third pass, whose inputs were stored in float32.
func (b *BatchNorm2d) train(x *frontend.Tensor) *frontend.Tensor {
	xs := x.Shape()
	c := xs[1]
	n := xs[0] * xs[2] * xs[3]
	if n < 2 {
		return errorf("BatchNorm2d: training needs more than one value per channel, got input of shape %v", xs)
	}
	per := func(t *frontend.Tensor) *frontend.Tensor { return t.Reshape(1, c, 1, 1) }
	axes := []int{0, 2, 3}
	k := x.Mean(axes, true).Mul(full(x, 1<<20)).Cast(frontend.Int64).Cast(x.DType()).Mul(full(x, 1.0/(1<<20)))
	d := x.Sub(k)
	s1 := d.Mean(axes, true)
	s2 := d.Mul(d).Mean(axes, true)
	v := s2.Sub(s1.Mul(s1)).Relu()
	mean := k.Add(s1)
	inv := v.Add(full(x, b.Eps)).Rsqrt()
	m := b.Momentum
	unbiased := v.Reshape(c).Mul(full(x, float64(n)/float64(n-1)))
	b.RunningMean = b.RunningMean.Mul(full(x, 1-m)).Add(mean.Reshape(c).Mul(full(x, m)))
	b.RunningVar = b.RunningVar.Mul(full(x, 1-m)).Add(unbiased.Mul(full(x, m)))
	a := inv.Mul(per(b.Weight))
	return d.Mul(a).Add(per(b.Bias).Sub(s1.Mul(a)))
}

// BatchNorm1d is BatchNorm2d over [N, C] (a linear layer's output: an
// SE-Net or classifier head) or [N, C, L] input, PyTorch's BatchNorm1d:
// the statistics are taken over N (and L) per channel.
type BatchNorm1d struct {
	Weight, Bias            *frontend.Tensor `nn:"float32"`
	RunningMean, RunningVar *frontend.Tensor `nn:"buffer"`
	Eps, Momentum           float64
	Training                bool
}

// NewBatchNorm1d returns a batch norm over c channels with BatchNorm2d's
// defaults, in training mode.
func NewBatchNorm1d(c int) *BatchNorm1d {
	b := NewBatchNorm2d(c)
	return &BatchNorm1d{Weight: b.Weight, Bias: b.Bias, RunningMean: b.RunningMean, RunningVar: b.RunningVar,
		Eps: b.Eps, Momentum: b.Momentum, Training: true}
}

// Forward normalizes x [N, C] or [N, C, L] as BatchNorm2d normalizes
// [N, C, L, 1].
func (b *BatchNorm1d) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x, b.Weight, b.Bias, b.RunningMean, b.RunningVar); f != nil {
		return f
	}
	if x.Rank() != 2 && x.Rank() != 3 {
		return errorf("BatchNorm1d: input of rank %d (shape %v), want [N, C] or [N, C, L]", x.Rank(), x.Shape())
	}
	xs := x.Shape()
	if c := b.Weight.Shape()[0]; xs[1] != c {
		return errorf("BatchNorm1d: input has %d channels, the layer has %d", xs[1], c)
	}
	l := 1
	if x.Rank() == 3 {
		l = xs[2]
	}
	bn := &BatchNorm2d{Weight: b.Weight, Bias: b.Bias, RunningMean: b.RunningMean, RunningVar: b.RunningVar,
		Eps: b.Eps, Momentum: b.Momentum, Training: b.Training}
	y := bn.Forward(x.Reshape(xs[0], xs[1], l, 1))
	b.RunningMean, b.RunningVar = bn.RunningMean, bn.RunningVar
	return y.Reshape(xs...)
}

// half reports whether dt is a 16-bit float type.
func half(dt frontend.DType) bool { return dt == frontend.BFloat16 || dt == frontend.Float16 }

// mixed is Forward for a bf16 or f16 input with float32 running
// statistics (mixed precision, nn.Autocast): as PyTorch's autocast runs
// batch norm, the statistics and the running averages are computed in
// float32 (from the input and the weight and bias cast to float32), and
// the result is the input's type. In evaluation mode only the affine
// map's s and t are float32 computations, applied in the input's type
// (the form a conv epilogue absorbs).
func (b *BatchNorm2d) mixed(x *frontend.Tensor) *frontend.Tensor {
	dt := x.DType()
	f32 := *b
	f32.Weight, f32.Bias = castTo(b.Weight, frontend.Float32), castTo(b.Bias, frontend.Float32)
	if b.Training {
		y := f32.train(x.Cast(frontend.Float32))
		b.RunningMean, b.RunningVar = f32.RunningMean, f32.RunningVar
		return y.Cast(dt)
	}
	c := b.Weight.Shape()[0]
	s := b.RunningVar.Add(full(b.RunningVar, b.Eps)).Rsqrt().Mul(f32.Weight)
	t := f32.Bias.Sub(b.RunningMean.Mul(s))
	return x.Mul(s.Cast(dt).Reshape(1, c, 1, 1)).Add(t.Cast(dt).Reshape(1, c, 1, 1))
}

// FoldInto returns a copy of conv whose weight and bias include this batch
// norm's evaluation-mode affine map, so that bn(conv(x)) = conv'(x) in
// evaluation mode.
func (b *BatchNorm2d) FoldInto(conv *Conv2d) *Conv2d {
	s := b.RunningVar.Add(full(b.RunningVar, b.Eps)).Rsqrt().Mul(b.Weight)
	t := b.Bias.Sub(b.RunningMean.Mul(s))
	out := *conv
	o := s.Shape()[0]
	out.Weight = conv.Weight.Mul(s.Reshape(o, 1, 1, 1))
	if conv.Bias != nil {
		out.Bias = conv.Bias.Mul(s).Add(t)
	} else {
		out.Bias = t
	}
	return &out
}

// windows returns the k×k strided windows of x [N, C, H, W] (already
// padded): term (i, j) holds x[:, :, i + s·oh, j + s·ow] for every output
// position. Each is one strided slice, so pooling is an elementwise
// reduction of k² tensors.
func windows(x *frontend.Tensor, k, s, oh, ow int) []*frontend.Tensor {
	xs := x.Shape()
	var out []*frontend.Tensor
	for i := range k {
		for j := range k {
			out = append(out, x.Slice(
				[]int{0, 0, i, j},
				[]int{xs[0], xs[1], i + s*(oh-1) + 1, j + s*(ow-1) + 1},
				[]int{1, 1, s, s}))
		}
	}
	return out
}

// poolShape checks a pooling layer's input and returns the output size
// (rounded up with ceil: PyTorch's ceil_mode, where a last window must
// start inside the input or its left padding).
func poolShape(name string, x *frontend.Tensor, k, s, p int, ceil bool) (oh, ow int, bad *frontend.Tensor) {
	if f := firstErr(x); f != nil {
		return 0, 0, f
	}
	if x.Rank() != 4 {
		return 0, 0, errorf("%s: input of shape %v, want [N, C, H, W]", name, x.Shape())
	}
	if k < 1 || s < 1 || p < 0 {
		return 0, 0, errorf("%s: kernel %d, stride %d, padding %d: want kernel and stride ≥ 1, padding ≥ 0", name, k, s, p)
	}
	if 2*p > k {
		return 0, 0, errorf("%s: padding %d is more than half the kernel %d", name, p, k)
	}
	xs := x.Shape()
	if xs[2]+2*p < k || xs[3]+2*p < k {
		return 0, 0, errorf("%s: kernel %d is larger than the padded input %dx%d (padding %d)", name, k, xs[2], xs[3], p)
	}
	size := func(n int) int {
		o := OutSize(n, k, s, p, 1)
		if ceil && (n+2*p-k)%s != 0 && o*s < n+p {
			o++
		}
		return o
	}
	return size(xs[2]), size(xs[3]), nil
}

// MaxPool2d takes the maximum over k×k windows (stride Stride, 0 meaning
// Kernel; padding with -∞). CeilMode rounds the output size up
// (PyTorch's ceil_mode): the last window may reach past the padding.
type MaxPool2d struct {
	Kernel, Stride, Padding int
	CeilMode                bool
}

// Forward pools x [N, C, H, W].
func (m MaxPool2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	y, _, _ := pool2d("MaxPool2d", x, m.Kernel, m.Stride, m.Padding, m.CeilMode, math.Inf(-1), (*frontend.Tensor).Max)
	return y
}

// AvgPool2d averages k×k windows (stride Stride, 0 meaning Kernel; zero
// padding counted in the average, PyTorch's count_include_pad, unless
// ExcludePad). CeilMode rounds the output size up (PyTorch's ceil_mode);
// the part of a last window past the padding is never counted.
type AvgPool2d struct {
	Kernel, Stride, Padding int
	CeilMode, ExcludePad    bool
}

// Forward pools x [N, C, H, W].
func (m AvgPool2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	y, oh, ow := pool2d("AvgPool2d", x, m.Kernel, m.Stride, m.Padding, m.CeilMode, 0, (*frontend.Tensor).Add)
	if y.Err() != nil {
		return y
	}
	if !m.CeilMode && !m.ExcludePad {
		return y.Mul(full(y, 1/float64(m.Kernel*m.Kernel)))
	}
	// Each window's count: rows times columns of the (padded) input it
	// covers, as PyTorch's avg_pool2d divides.
	s := m.Stride
	if s == 0 {
		s = m.Kernel
	}
	xs := x.Shape()
	counts := func(n, o int) []float64 {
		c := make([]float64, o)
		for i := range c {
			lo := i*s - m.Padding
			hi := min(lo+m.Kernel, n+m.Padding)
			if m.ExcludePad {
				lo, hi = max(lo, 0), min(hi, n)
			}
			c[i] = float64(hi - lo)
		}
		return c
	}
	ch, cw := counts(xs[2], oh), counts(xs[3], ow)
	inv := make([]float64, 0, oh*ow)
	for _, a := range ch {
		for _, b := range cw {
			inv = append(inv, 1/(a*b))
		}
	}
	return y.Mul(frontend.FromSlice(inv, 1, 1, oh, ow).Cast(y.DType()))
}

// pool2d combines the k×k windows of x [N, C, H, W], padded with pad, at
// stride s (0 meaning k) with combine, and returns the output size; name
// locates a bad shape.
func pool2d(name string, x *frontend.Tensor, k, s, p int, ceil bool, pad float64, combine func(a, b *frontend.Tensor) *frontend.Tensor) (y *frontend.Tensor, oh, ow int) {
	if s == 0 {
		s = k
	}
	oh, ow, bad := poolShape(name, x, k, s, p, ceil)
	if bad != nil {
		return bad, 0, 0
	}
	// The high side is padded past p where a ceil-mode window reaches.
	xs := x.Shape()
	hh, hw := max(p, (oh-1)*s+k-xs[2]-p), max(p, (ow-1)*s+k-xs[3]-p)
	if p > 0 || hh > 0 || hw > 0 {
		x = x.Pad([]int{0, 0, p, p}, []int{0, 0, hh, hw}, pad)
	}
	ws := windows(x, k, s, oh, ow)
	y = ws[0]
	for _, w := range ws[1:] {
		y = combine(y, w)
	}
	return y, oh, ow
}

// AdaptiveAvgPool2d averages x [N, C, H, W] to [N, C, OutH, OutW]: output
// cell i covers input rows ⌊i·H/OutH⌋ to ⌈(i+1)·H/OutH⌉, as PyTorch's.
type AdaptiveAvgPool2d struct{ OutH, OutW int }

// Forward pools x.
func (m AdaptiveAvgPool2d) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x); f != nil {
		return f
	}
	if x.Rank() != 4 {
		return errorf("AdaptiveAvgPool2d: input of shape %v, want [N, C, H, W]", x.Shape())
	}
	if m.OutH < 1 || m.OutW < 1 {
		return errorf("AdaptiveAvgPool2d: output size %dx%d, want ≥ 1", m.OutH, m.OutW)
	}
	xs := x.Shape()
	if m.OutH == 1 && m.OutW == 1 {
		return x.Mean([]int{2, 3}, true)
	}
	if xs[2]%m.OutH == 0 && xs[3]%m.OutW == 0 {
		// Equal windows: one reshape and one mean.
		kh, kw := xs[2]/m.OutH, xs[3]/m.OutW
		return x.Reshape(xs[0], xs[1], m.OutH, kh, m.OutW, kw).Mean([]int{3, 5}, false)
	}
	rows := make([]*frontend.Tensor, m.OutH)
	for i := range m.OutH {
		h0, h1 := i*xs[2]/m.OutH, ceilDiv((i+1)*xs[2], m.OutH)
		cols := make([]*frontend.Tensor, m.OutW)
		for j := range m.OutW {
			w0, w1 := j*xs[3]/m.OutW, ceilDiv((j+1)*xs[3], m.OutW)
			cols[j] = x.Slice([]int{0, 0, h0, w0}, []int{xs[0], xs[1], h1, w1}, nil).Mean([]int{2, 3}, true)
		}
		rows[i] = frontend.Concat(3, cols...)
	}
	return frontend.Concat(2, rows...)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Flatten reshapes [N, ...] to [N, rest].
type Flatten struct{}

// Forward flattens x.
func (Flatten) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x); f != nil {
		return f
	}
	if x.Rank() < 1 {
		return errorf("Flatten: input is a scalar")
	}
	return x.Reshape(x.Shape()[0], -1)
}

// ReLU is max(x, 0).
type ReLU struct{}

// Forward applies the activation.
func (ReLU) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Relu() }

// GELU is x·Φ(x), exact ("none") or with the tanh approximation ("tanh").
type GELU struct{ Approximate string }

// Forward applies the activation.
func (g GELU) Forward(x *frontend.Tensor) *frontend.Tensor {
	a := g.Approximate
	if a == "" {
		a = "none"
	}
	return x.Gelu(a)
}

// SiLU is x·sigmoid(x).
type SiLU struct{}

// Forward applies the activation.
func (SiLU) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Mul(x.Sigmoid()) }

// ReLU6 is min(max(x, 0), 6) (MobileNetV2's activation; ONNX's Clip).
type ReLU6 struct{}

// Forward applies the activation.
func (ReLU6) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Relu().Min(full(x, 6)) }

// Sigmoid is 1/(1+e^−x) (EfficientNet's squeeze-excite gate).
type Sigmoid struct{}

// Forward applies the activation.
func (Sigmoid) Forward(x *frontend.Tensor) *frontend.Tensor { return x.Sigmoid() }

// Hardsigmoid is min(max(x+3, 0), 6)/6 (MobileNetV3's squeeze-excite
// gate), as PyTorch computes it.
type Hardsigmoid struct{}

// Forward applies the activation.
func (Hardsigmoid) Forward(x *frontend.Tensor) *frontend.Tensor {
	return x.Add(full(x, 3)).Relu().Min(full(x, 6)).Div(full(x, 6))
}

// Hardswish is x·min(max(x+3, 0), 6)/6 (MobileNetV3's activation).
type Hardswish struct{}

// Forward applies the activation.
func (Hardswish) Forward(x *frontend.Tensor) *frontend.Tensor {
	return x.Mul(x.Add(full(x, 3)).Relu().Min(full(x, 6))).Div(full(x, 6))
}

// Sequential applies its layers in order.
type Sequential struct{ Layers []Layer }

// Forward applies every layer.
func (s *Sequential) Forward(x *frontend.Tensor) *frontend.Tensor {
	for _, l := range s.Layers {
		x = l.Forward(x)
	}
	return x
}

// Dropout zeroes each element with probability P and scales the others
// by 1/(1-P) in training mode, with masks drawn by the frontend's seeded
// counter-based generator (frontend.Seed: the same seed gives the same
// masks, compiled or eager); in evaluation mode it is the identity.
type Dropout struct {
	P        float64
	Training bool
}

// NewDropout returns a dropout layer in training mode.
func NewDropout(p float64) *Dropout { return &Dropout{P: p, Training: true} }

// Forward applies dropout to x.
func (d *Dropout) Forward(x *frontend.Tensor) *frontend.Tensor {
	if f := firstErr(x); f != nil {
		return f
	}
	if d.P < 0 || d.P > 1 || d.P != d.P {
		return errorf("Dropout: probability %v is not in [0, 1]", d.P)
	}
	return frontend.Dropout(x, d.P, d.Training)
}
