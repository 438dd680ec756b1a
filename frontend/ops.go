package frontend

import (
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"math"
)

// This file is the Tensor API over the graph dialect: one method or
// function per op, each recording the op with graph.Build, so the op's
// shape rule checks the operands at the caller's line.

func attr(name string, v ir.Attribute) ir.NamedAttr { return ir.NamedAttr{Name: name, Value: v} }

func ints(xs []int) ir.ArrayAttr { return graph.Ints(toInt64s(xs)...) }

func i64(v int) ir.IntegerAttr { return ir.Int(int64(v), ir.I64) }

func f32(v float64) ir.FloatAttr { return ir.Float(v, ir.F32) }

func op(name string, attrs ...ir.NamedAttr) opSpec {
	return opSpec{name: name, props: ir.Dict(attrs...)}
}

func (t *Tensor) unary(name string) *Tensor { return apply(nil, op(name), t) }

func (t *Tensor) binary(name string, y *Tensor) *Tensor { return apply(nil, op(name), t, y) }

// Neg returns -t.
func (t *Tensor) Neg() *Tensor { return t.unary("neg") }

// Abs returns |t|.
func (t *Tensor) Abs() *Tensor { return t.unary("abs") }

// Exp returns e^t.
func (t *Tensor) Exp() *Tensor { return t.unary("exp") }

// Log returns ln t.
func (t *Tensor) Log() *Tensor { return t.unary("log") }

// Sqrt returns √t.
func (t *Tensor) Sqrt() *Tensor { return t.unary("sqrt") }

// Rsqrt returns 1/√t.
func (t *Tensor) Rsqrt() *Tensor { return t.unary("rsqrt") }

// Tanh returns tanh t.
func (t *Tensor) Tanh() *Tensor { return t.unary("tanh") }

// Sigmoid returns 1/(1+e^-t).
func (t *Tensor) Sigmoid() *Tensor { return t.unary("sigmoid") }

// Relu returns max(t, 0).
func (t *Tensor) Relu() *Tensor { return t.unary("relu") }

// Erf returns the error function of t.
func (t *Tensor) Erf() *Tensor { return t.unary("erf") }

// Sin returns sin t.
func (t *Tensor) Sin() *Tensor { return t.unary("sin") }

// Cos returns cos t.
func (t *Tensor) Cos() *Tensor { return t.unary("cos") }

// Reciprocal returns 1/t.
func (t *Tensor) Reciprocal() *Tensor { return t.unary("reciprocal") }

// Gelu returns the GELU of t; approximate is "none" (exact) or "tanh".
func (t *Tensor) Gelu(approximate string) *Tensor {
	return apply(nil, op("gelu", attr("approximate", ir.Str(approximate))), t)
}

// Add returns t + y, broadcast as in NumPy.
func (t *Tensor) Add(y *Tensor) *Tensor { return t.binary("add", y) }

// Sub returns t - y.
func (t *Tensor) Sub(y *Tensor) *Tensor { return t.binary("sub", y) }

// Mul returns t · y.
func (t *Tensor) Mul(y *Tensor) *Tensor { return t.binary("mul", y) }

// Div returns t / y.
func (t *Tensor) Div(y *Tensor) *Tensor { return t.binary("div", y) }

// Pow returns t^y.
func (t *Tensor) Pow(y *Tensor) *Tensor { return t.binary("pow", y) }

// Max returns the elementwise maximum of t and y.
func (t *Tensor) Max(y *Tensor) *Tensor { return t.binary("max", y) }

// Min returns the elementwise minimum of t and y.
func (t *Tensor) Min(y *Tensor) *Tensor { return t.binary("min", y) }

// Cmp compares t with y elementwise with pred ("eq", "ne", "lt", "le",
// "gt", "ge") and returns a Bool tensor.
func (t *Tensor) Cmp(pred string, y *Tensor) *Tensor {
	return apply(nil, op("cmp", attr("predicate", ir.Str(pred))), t, y)
}

// Where returns x where cond is true and y elsewhere (graph.select).
func Where(cond, x, y *Tensor) *Tensor { return apply(nil, op("select"), cond, x, y) }

// Cast converts t's elements to dt.
func (t *Tensor) Cast(dt DType) *Tensor {
	if dt.Elem() == nil {
		return failed(located(callerLoc(), "Cast: unknown dtype %v", dt))
	}
	return apply(nil, opSpec{name: "cast", cast: dt.Elem()}, t)
}

func (t *Tensor) reduce(name string, axes []int, keepdims bool) *Tensor {
	attrs := []ir.NamedAttr{attr("keepdims", ir.Bool(keepdims))}
	if axes != nil {
		attrs = append(attrs, attr("axes", ints(axes)))
	}
	return apply(nil, op(name, attrs...), t)
}

// Sum returns the sum over axes (every axis when axes is nil); keepdims
// keeps reduced dims as size 1.
func (t *Tensor) Sum(axes []int, keepdims bool) *Tensor {
	return t.reduce("reduce_sum", axes, keepdims)
}

// Mean returns the mean over axes (see Sum).
func (t *Tensor) Mean(axes []int, keepdims bool) *Tensor {
	return t.reduce("reduce_mean", axes, keepdims)
}

// ReduceMax returns the maximum over axes (see Sum).
func (t *Tensor) ReduceMax(axes []int, keepdims bool) *Tensor {
	return t.reduce("reduce_max", axes, keepdims)
}

// ReduceMin returns the minimum over axes (see Sum).
func (t *Tensor) ReduceMin(axes []int, keepdims bool) *Tensor {
	return t.reduce("reduce_min", axes, keepdims)
}

// Argmax returns the Int64 index of the maximum along axis.
func (t *Tensor) Argmax(axis int, keepdims bool) *Tensor {
	return apply(nil, op("argmax", attr("axis", i64(axis)), attr("keepdims", ir.Bool(keepdims))), t)
}

// Reshape returns t's elements in shape (one entry may be -1).
func (t *Tensor) Reshape(shape ...int) *Tensor {
	return apply(nil, op("reshape", attr("shape", ints(shape))), t)
}

// Transpose permutes t's dims: result dim i is t's dim perm[i].
func (t *Tensor) Transpose(perm ...int) *Tensor {
	return apply(nil, op("transpose", attr("perm", ints(perm))), t)
}

// BroadcastTo stretches t to shape as NumPy does.
func (t *Tensor) BroadcastTo(shape ...int) *Tensor {
	return apply(nil, op("broadcast_to", attr("shape", ints(shape))), t)
}

// Concat joins ts along axis.
func Concat(axis int, ts ...*Tensor) *Tensor {
	return apply(nil, op("concat", attr("axis", i64(axis))), ts...)
}

// Slice returns t[starts:limits:strides] per dim (strides nil: all 1).
func (t *Tensor) Slice(starts, limits, strides []int) *Tensor {
	attrs := []ir.NamedAttr{attr("starts", ints(starts)), attr("limits", ints(limits))}
	if strides != nil {
		attrs = append(attrs, attr("strides", ints(strides)))
	}
	return apply(nil, op("slice", attrs...), t)
}

// Pad adds low[d] and high[d] elements equal to value around dim d.
func (t *Tensor) Pad(low, high []int, value float64) *Tensor {
	var v ir.Attribute = ir.Int(int64(value), ir.I64)
	if fe, ok := t.dtype.Elem().(*ir.FloatType); ok && t.dtype.IsFloat() {
		v = ir.Float(value, fe)
	}
	return apply(nil, op("pad", attr("low", ints(low)), attr("high", ints(high)), attr("value", v)), t)
}

// Gather picks slices of t along axis at indices (numpy.take; an index
// in [-n, 0) counts from the end of the axis's n). Indices the host holds
// (KnownInt64s: made on the host or uploaded from it) are checked before
// the op is recorded: one outside [-n, n) is an error located at the
// caller's line, and a compiled call fails before anything runs. Indices
// computed on the device are checked where the graph runs: the
// interpreter and the CPU backend report one out of range as an error; a
// GPU kernel reads zeros for it (never outside t: docs/robustness.md).
func (t *Tensor) Gather(indices *Tensor, axis int) *Tensor {
	if t != nil && t.err == nil && indices != nil {
		a := axis
		if a < 0 {
			a += len(t.shape)
		}
		if vals, ok := indices.KnownInt64s(); ok && a >= 0 && a < len(t.shape) {
			n := int64(t.shape[a])
			for i, v := range vals {
				if v < -n || v >= n {
					return failed(atUserLine(located(callerLoc(), "Gather: index %d at position %d is out of range for axis %d of size %d", v, i, axis, n)))
				}
			}
		}
	}
	return apply(nil, op("gather", attr("axis", i64(axis))), t, indices)
}

// MatMul returns the matrix product t·y (numpy.matmul).
func (t *Tensor) MatMul(y *Tensor) *Tensor { return t.binary("matmul", y) }

// MatMul returns x·y (numpy.matmul).
func MatMul(x, y *Tensor) *Tensor { return apply(nil, op("matmul"), x, y) }

// MatMulBias returns x·y + bias for y of rank >= 2 and bias [N] (y's last
// size) of x's dtype, the bias added to each sum before its one rounding:
// PyTorch's linear (addmm), whose bias a matmul library adds in its
// float32 epilogue. A bf16 x·y + bias written with Add rounds twice.
func MatMulBias(x, y, bias *Tensor) *Tensor { return apply(nil, op("matmul"), x, y, bias) }

// Conv2DOptions are the attributes of Conv2D; zero values are defaults.
type Conv2DOptions struct {
	Strides, Padding, Dilations []int
	Groups                      int
}

// Conv2D convolves x [N, C, H, W] with weight [O, C/groups, KH, KW] and
// adds bias [O] when it is not nil.
func Conv2D(x, weight, bias *Tensor, o Conv2DOptions) *Tensor {
	var attrs []ir.NamedAttr
	if o.Strides != nil {
		attrs = append(attrs, attr("strides", ints(o.Strides)))
	}
	if o.Padding != nil {
		attrs = append(attrs, attr("padding", ints(o.Padding)))
	}
	if o.Dilations != nil {
		attrs = append(attrs, attr("dilations", ints(o.Dilations)))
	}
	if o.Groups != 0 {
		attrs = append(attrs, attr("groups", i64(o.Groups)))
	}
	operands := []*Tensor{x, weight}
	if bias != nil {
		operands = append(operands, bias)
	}
	return apply(nil, op("conv2d", attrs...), operands...)
}

// Softmax returns the softmax of t along axis.
func (t *Tensor) Softmax(axis int) *Tensor {
	return apply(nil, op("softmax", attr("axis", i64(axis))), t)
}

// LogSoftmax returns the log of the softmax of t along axis.
func (t *Tensor) LogSoftmax(axis int) *Tensor {
	return apply(nil, op("log_softmax", attr("axis", i64(axis))), t)
}

// LogSumExp returns log(Σ exp(t)) along axis, computed stably (the
// maximum subtracted first); with keepdims the axis stays as size 1.
func (t *Tensor) LogSumExp(axis int, keepdims bool) *Tensor {
	return apply(nil, op("logsumexp", attr("axis", i64(axis)), attr("keepdims", ir.Bool(keepdims))), t)
}

// LayerNorm normalizes t over dims axis… with weight and bias.
func (t *Tensor) LayerNorm(weight, bias *Tensor, axis int, epsilon float64) *Tensor {
	return apply(nil, op("layer_norm", attr("axis", i64(axis)), attr("epsilon", f32(epsilon))), t, weight, bias)
}

// RMSNorm normalizes t by its root mean square over dims axis… and scales
// by weight.
func (t *Tensor) RMSNorm(weight *Tensor, axis int, epsilon float64) *Tensor {
	return apply(nil, op("rms_norm", attr("axis", i64(axis)), attr("epsilon", f32(epsilon))), t, weight)
}

// AttentionOptions are the optional parts of Attention.
type AttentionOptions struct {
	// Mask is an optional Bool (keep where true) or additive float mask.
	Mask *Tensor
	// Scale multiplies the scores; 0 means 1/√D.
	Scale  float64
	Causal bool
}

// Attention returns softmax(q·kᵀ·scale + mask)·v over the last two dims.
func Attention(q, k, v *Tensor, o AttentionOptions) *Tensor {
	if o.Scale == 0 && q != nil && q.err == nil && len(q.shape) > 0 {
		// graph.attention's default scale needs a static D: with a
		// symbolic D (Dynamic true) the frontend reads D, which
		// specializes the graph on it, and passes the scale.
		if sym := q.symShape(); len(sym) == len(q.shape) && sym[len(sym)-1] == ir.Dynamic {
			o.Scale = 1 / math.Sqrt(float64(q.Dim(len(q.shape)-1)))
		}
	}
	var attrs []ir.NamedAttr
	if o.Scale != 0 {
		attrs = append(attrs, attr("scale", f32(o.Scale)))
	}
	if o.Causal {
		attrs = append(attrs, attr("causal", ir.Bool(true)))
	}
	operands := []*Tensor{q, k, v}
	if o.Mask != nil {
		operands = append(operands, o.Mask)
	}
	return apply(nil, op("attention", attrs...), operands...)
}
