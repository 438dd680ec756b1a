package loop

import "github.com/strata-ir/strata/ir"

// ConvAttr is a discardable attribute of a top-level loop.parallel of kind
// "conv2d" (NestKindAttr): convert-graph-to-loop sets it on a convolution
// nest that computes one output element a point from two buffers, the
// input x [N, C, H, W] and the weight w [O, C, KH, KW], with static shapes
// and one group, so that convert-loop-to-gpu may run it as an implicit
// GEMM on tensor cores (or a library's convolution). Its value is
// array<i64: stride h, stride w, pad top, pad left, pad bottom, pad right,
// dilation h, dilation w>, with a ninth value 1 for a channels-last nest:
// one over (n, oh, ow, o) reading x [N, H, W, C] and w [O, KH, KW, C].
const ConvAttr = "loop.conv"

// Conv is the geometry ConvAttr records.
type Conv struct {
	Strides   [2]int64 // (h, w)
	Padding   [4]int64 // top, left, bottom, right
	Dilations [2]int64 // (h, w)
	// ChannelsLast: the nest and its operands are NHWC (graph.conv2d's
	// layout "NHWC").
	ChannelsLast bool
}

// SetConv records c on nest.
func SetConv(nest *ir.Operation, c Conv) {
	v := []int64{c.Strides[0], c.Strides[1], c.Padding[0], c.Padding[1], c.Padding[2], c.Padding[3], c.Dilations[0], c.Dilations[1]}
	if c.ChannelsLast {
		v = append(v, 1)
	}
	nest.SetAttr(ConvAttr, ir.I64Array(v...))
}

// ConvOf returns the geometry ConvAttr records on nest, and whether it
// records one (of positive strides and dilations and padding of at least
// zero).
func ConvOf(nest *ir.Operation) (Conv, bool) {
	a, ok := nest.Attr(ConvAttr).(ir.DenseArrayAttr)
	if !ok || a.Elem != ir.I64 || (len(a.Values) != 8 && (len(a.Values) != 9 || a.Values[8] != 1)) {
		return Conv{}, false
	}
	v := a.Values
	c := Conv{Strides: [2]int64{v[0], v[1]}, Padding: [4]int64{v[2], v[3], v[4], v[5]}, Dilations: [2]int64{v[6], v[7]}, ChannelsLast: len(v) == 9}
	for _, n := range append(c.Strides[:], c.Dilations[:]...) {
		if n < 1 {
			return Conv{}, false
		}
	}
	for _, n := range c.Padding {
		if n < 0 {
			return Conv{}, false
		}
	}
	return c, true
}
