package interp

import (
	"fmt"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// gpu.library_matmul, the product a vendor library computes on the host's
// stream, has the meaning of the loop nest it replaces: each product of
// two elements in f32 (exact for bf16 and f16), summed in f32 in order of
// k from +0, rounded once to C's type. A library sums in another order,
// so the GPU agrees with this within f32 rounding of the sum. A bias
// operand is added to the sum (in f32) before the rounding.
func init() {
	registerAll(map[string]Rule{gpu.LibraryMatmulOp: libraryMatmulRule, gpu.LibraryConv2DOp: libraryConv2DRule})
}

func libraryMatmulRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	if len(args) != 3 && len(args) != 4 {
		return nil, fmt.Errorf("takes A, B, C and an optional bias, got %d operands", len(args))
	}
	var bufs [4]*Buffer
	for i, v := range args {
		b, err := bufferArg(v)
		if err != nil {
			return nil, err
		}
		bufs[i] = b
	}
	a, b, c := bufs[0], bufs[1], bufs[2]
	transA, transB := gpu.LibraryTransposes(op)
	batch, m, n, k, err := gpu.MatmulDims(a.shape, b.shape, c.shape, transA, transB)
	if err != nil {
		return nil, err
	}
	if k < 1 {
		return nil, fmt.Errorf("K must be positive, not %d", k)
	}
	if a.elem != b.elem || (a.elem != ir.BF16 && a.elem != ir.F16) || (c.elem != a.elem && c.elem != ir.F32) {
		return nil, fmt.Errorf("multiplies %s by %s into %s: A and B must both be bf16 or f16, C of their type or f32", a.elem, b.elem, c.elem)
	}
	out := c.elem.(*ir.FloatType)
	av, bv := halfToF32(a), halfToF32(b)
	var bias []float32
	if bb := bufs[3]; bb != nil {
		if bb.elem != a.elem || c.elem != a.elem || len(bb.shape) != 1 || bb.shape[0] != n {
			return nil, fmt.Errorf("bias of %s %v into C of %s: the bias must be [%d] of A's %s, and C of that type too", bb.elem, bb.shape, c.elem, n, a.elem)
		}
		bias = halfToF32(bb)
	}
	count := int64(1)
	for _, e := range batch {
		count *= e
	}
	shared := gpu.SharedA(a.shape, b.shape)
	for z := range count {
		ao, bo, co := z*m*k, z*k*n, z*m*n
		if shared {
			ao = 0
		}
		for i := range m {
			for j := range n {
				var acc float32
				for kk := range k {
					x := av[ao+i*k+kk]
					if transA {
						x = av[ao+kk*m+i]
					}
					y := bv[bo+kk*n+j]
					if transB {
						y = bv[bo+j*k+kk]
					}
					// The conversion keeps Go from fusing the multiply into the add.
					acc += float32(x * y)
				}
				if bias != nil {
					acc += bias[j]
				}
				storeF32(c, co+i*n+j, acc, out)
			}
		}
	}
	return nil, nil
}

// halfToF32 returns a bf16 or f16 buffer's elements as float32 values
// (exactly).
func halfToF32(b *Buffer) []float32 {
	s := b.data.([]uint16)
	out := make([]float32, len(s))
	ft := b.elem.(*ir.FloatType)
	for i, v := range s {
		out[i] = float32(ir.FloatFromBits(uint64(v), ft))
	}
	return out
}

// storeF32 stores v, rounded once to t, at offset off of a float buffer.
func storeF32(b *Buffer, off int64, v float32, t *ir.FloatType) {
	switch s := b.data.(type) {
	case []float32:
		s[off] = v
	case []uint16:
		s[off] = uint16(ir.FloatToBits(float64(v), t))
	}
}

// libraryConv2DRule is gpu.library_conv2d with the meaning of the nest
// it replaces: the products in f32 (exact for bf16 and f16), summed in
// f32 from +0, the terms of the padding left out, rounded once to the
// written operand's type. The forward convolution sums in order of (c, a,
// b) as a convolution nest does; the filter gradient in order of (n, i,
// j), as the convolution of transposed copies that autodiff makes of it
// does; the data gradient in order of (o, a, b).
func libraryConv2DRule(_ *Frame, op *ir.Operation, args []Value) ([]Value, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("takes x, w and y, got %d operands", len(args))
	}
	g, err := gpu.LibraryConvGeometry(op)
	if err != nil {
		return nil, err
	}
	var bufs [3]*Buffer
	for i, v := range args {
		b, err := bufferArg(v)
		if err != nil {
			return nil, err
		}
		if len(b.shape) != 4 || (b.elem != ir.BF16 && b.elem != ir.F16) {
			return nil, fmt.Errorf("operand #%d must be a 4-D bf16 or f16 buffer, not %v of %s", i, b.shape, b.elem)
		}
		bufs[i] = b
	}
	x, w, y := bufs[0], bufs[1], bufs[2]
	xs, ws, ys := g.ConvNCHW(x.shape), g.ConvNCHW(w.shape), g.ConvNCHW(y.shape)
	if x.elem != w.elem || x.elem != y.elem || ws[1] != xs[1] || ys[0] != xs[0] || ys[1] != ws[0] ||
		ys[2] != gpu.ConvOutSize(xs[2], ws[2], g.Padding[0], g.Strides[0], g.Dilations[0]) ||
		ys[3] != gpu.ConvOutSize(xs[3], ws[3], g.Padding[1], g.Strides[1], g.Dilations[1]) {
		return nil, fmt.Errorf("x %v of %s, w %v of %s and y %v of %s are not one convolution's", xs, x.elem, ws, w.elem, ys, y.elem)
	}
	xv, wv, yv := halfToF32(x), halfToF32(w), halfToF32(y)
	n, c, h, wd, o, kh, kw, oh, ow := xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], ys[2], ys[3]
	// in returns the input row r and column q that tap (a, b) of output
	// (i, j)'s window reads, and whether they are inside x.
	in := func(i, j, a, b int64) (r, q int64, ok bool) {
		r = i*g.Strides[0] - g.Padding[0] + a*g.Dilations[0]
		q = j*g.Strides[1] - g.Padding[1] + b*g.Dilations[1]
		return r, q, r >= 0 && r < h && q >= 0 && q < wd
	}
	xAt := func(ni, ci, r, q int64) int64 { return ((ni*c+ci)*h+r)*wd + q }
	wAt := func(oi, ci, a, b int64) int64 { return ((oi*c+ci)*kh+a)*kw + b }
	yAt := func(ni, oi, i, j int64) int64 { return ((ni*o+oi)*oh+i)*ow + j }
	if g.ChannelsLast {
		xAt = func(ni, ci, r, q int64) int64 { return ((ni*h+r)*wd+q)*c + ci }
		wAt = func(oi, ci, a, b int64) int64 { return ((oi*kh+a)*kw+b)*c + ci }
		yAt = func(ni, oi, i, j int64) int64 { return ((ni*oh+i)*ow+j)*o + oi }
	}
	// The conversions keep Go from fusing a multiply into an add.
	switch g.Direction {
	case gpu.ConvForward:
		for ni := range n {
			for oi := range o {
				for i := range oh {
					for j := range ow {
						var acc float32
						for ci := range c {
							for a := range kh {
								for b := range kw {
									if r, q, ok := in(i, j, a, b); ok {
										acc += float32(xv[xAt(ni, ci, r, q)] * wv[wAt(oi, ci, a, b)])
									}
								}
							}
						}
						storeF32(y, yAt(ni, oi, i, j), acc, y.elem.(*ir.FloatType))
					}
				}
			}
		}
	case gpu.ConvBackwardFilter:
		for oi := range o {
			for ci := range c {
				for a := range kh {
					for b := range kw {
						var acc float32
						for ni := range n {
							for i := range oh {
								for j := range ow {
									if r, q, ok := in(i, j, a, b); ok {
										acc += float32(xv[xAt(ni, ci, r, q)] * yv[yAt(ni, oi, i, j)])
									}
								}
							}
						}
						storeF32(w, wAt(oi, ci, a, b), acc, w.elem.(*ir.FloatType))
					}
				}
			}
		}
	case gpu.ConvBackwardData:
		acc := make([]float32, len(xv))
		for oi := range o {
			for a := range kh {
				for b := range kw {
					for ni := range n {
						for i := range oh {
							for j := range ow {
								r, q, ok := in(i, j, a, b)
								if !ok {
									continue
								}
								for ci := range c {
									acc[xAt(ni, ci, r, q)] += float32(yv[yAt(ni, oi, i, j)] * wv[wAt(oi, ci, a, b)])
								}
							}
						}
					}
				}
			}
		}
		for i, v := range acc {
			storeF32(x, int64(i), v, x.elem.(*ir.FloatType))
		}
	}
	return nil, nil
}
