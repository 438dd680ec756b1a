package onnx

import (
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// attrOps draw one node of an op type with attribute values and constant
// operands as a file may hold them: zero, negative or too large kernels,
// strides, dilations, pads, groups, axes, permutations, sizes and steps.
// The input is "x" of rank rank; the result is the node's inputs and
// attributes.
var attrOps = map[string]func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute){
	"Conv": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		sp := max(rank-2, 1)
		w := append([]int64{drawInt(t, "out", 0, 4), drawInt(t, "in", 0, 4)}, drawInts(t, "k", sp, 0, 4)...)
		b.weight("w", w...)
		ins := []string{"x", "w"}
		if rapid.Bool().Draw(t, "bias") {
			b.weight("b", drawInt(t, "bias len", 0, 4))
			ins = append(ins, "b")
		}
		return ins, windowAttrs(t, sp, true)
	},
	"ConvTranspose": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		sp := max(rank-2, 1)
		w := append([]int64{drawInt(t, "in", 0, 4), drawInt(t, "out", 0, 4)}, drawInts(t, "k", sp, 0, 4)...)
		b.weight("w", w...)
		attrs := windowAttrs(t, sp, true)
		if rapid.Bool().Draw(t, "has output_padding") {
			attrs = append(attrs, aInts("output_padding", drawInts(t, "output_padding", sp, -1, 3)...))
		}
		if rapid.Bool().Draw(t, "has output_shape") {
			attrs = append(attrs, aInts("output_shape", drawInts(t, "output_shape", sp, 0, 9)...))
		}
		return []string{"x", "w"}, attrs
	},
	"MaxPool":     poolAttrs,
	"AveragePool": poolAttrs,
	"GlobalAveragePool": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, nil
	},
	"BatchNormalization": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		n := drawInt(t, "channels", 0, 4)
		for _, s := range []string{"s", "h", "m", "v"} {
			b.weight(s, n)
		}
		return []string{"x", "s", "h", "m", "v"}, []*Attribute{aFloat("epsilon", float32(drawInt(t, "eps", -1, 1)))}
	},
	"LayerNormalization": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.weight("s", drawInts(t, "scale", drawIntN(t, "scale rank", 0, 2), 0, 4)...)
		return []string{"x", "s"}, []*Attribute{aInt("axis", drawInt(t, "axis", -5, 5))}
	},
	"InstanceNormalization": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.weight("s", drawInt(t, "scale len", 0, 4))
		b.weight("h", drawInt(t, "bias len", 0, 4))
		return []string{"x", "s", "h"}, []*Attribute{aFloat("epsilon", float32(drawInt(t, "eps", -1, 1)))}
	},
	"GroupNormalization": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.weight("s", drawInt(t, "scale len", 0, 4))
		b.weight("h", drawInt(t, "bias len", 0, 4))
		return []string{"x", "s", "h"}, []*Attribute{aInt("num_groups", drawInt(t, "groups", -1, 5))}
	},
	"Resize": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		sc := rapid.SliceOfN(rapid.SampledFrom([]float32{-1, 0, 0.5, 1, 1.5, 2, 3}), 0, 5).Draw(t, "scales")
		b.floats("sc", []int64{int64(len(sc))}, sc...)
		return []string{"x", "", "sc"}, []*Attribute{aStr("mode", rapid.SampledFrom([]string{"nearest", "linear", "cubic"}).Draw(t, "mode")),
			aStr("coordinate_transformation_mode", rapid.SampledFrom([]string{"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners", "tf_crop_and_resize"}).Draw(t, "ctm")),
			aStr("nearest_mode", rapid.SampledFrom([]string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "bad"}).Draw(t, "nearest"))}
	},
	"DepthToSpace": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, []*Attribute{aInt("blocksize", drawInt(t, "blocksize", -1, 3)), aStr("mode", rapid.SampledFrom([]string{"DCR", "CRD", "BAD"}).Draw(t, "mode"))}
	},
	"SpaceToDepth": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, []*Attribute{aInt("blocksize", drawInt(t, "blocksize", -1, 3))}
	},
	"LRN": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, []*Attribute{aInt("size", drawInt(t, "size", -1, 6)), aFloat("beta", float32(drawInt(t, "beta", -1, 2)))}
	},
	"PRelu": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.weight("slope", drawInts(t, "slope", drawIntN(t, "slope rank", 0, 4), 1, 5)...)
		return []string{"x", "slope"}, nil
	},
	"ArgMax": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, []*Attribute{aInt("axis", drawInt(t, "axis", -5, 5)), aInt("keepdims", drawInt(t, "keep", 0, 1)),
			aInt("select_last_index", drawInt(t, "last", 0, 1))}
	},
	"Softmax": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, []*Attribute{aInt("axis", drawInt(t, "axis", -5, 5))}
	},
	"Flatten": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, []*Attribute{aInt("axis", drawInt(t, "axis", -5, 5))}
	},
	"Transpose": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		return []string{"x"}, []*Attribute{aInts("perm", drawInts(t, "perm", drawIntN(t, "perm len", 0, 5), -1, 4)...)}
	},
	"Reshape": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("shape", drawInts(t, "shape", drawIntN(t, "shape len", 0, 4), -2, 6)...)
		return []string{"x", "shape"}, nil
	},
	"Expand": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("shape", drawInts(t, "shape", drawIntN(t, "shape len", 0, 5), -1, 4)...)
		return []string{"x", "shape"}, nil
	},
	"Tile": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("reps", drawInts(t, "reps", drawIntN(t, "reps len", 0, 5), -1, 3)...)
		return []string{"x", "reps"}, nil
	},
	"Slice": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		n := drawIntN(t, "slice len", 0, 3)
		b.ints("starts", drawInts(t, "starts", n, -6, 6)...)
		b.ints("ends", drawInts(t, "ends", n, -6, 6)...)
		b.ints("axes", drawInts(t, "axes", n, -5, 4)...)
		b.ints("steps", drawInts(t, "steps", n, -3, 3)...)
		return []string{"x", "starts", "ends", "axes", "steps"}, nil
	},
	"Split": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("sizes", drawInts(t, "sizes", drawIntN(t, "parts", 1, 3), -1, 4)...)
		return []string{"x", "sizes"}, []*Attribute{aInt("axis", drawInt(t, "axis", -5, 5))}
	},
	"Gather": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("idx", drawInts(t, "idx", drawIntN(t, "idx len", 0, 3), -6, 6)...)
		return []string{"x", "idx"}, []*Attribute{aInt("axis", drawInt(t, "axis", -5, 5))}
	},
	"Concat": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.weight("y", drawInts(t, "other", rank, 0, 4)...)
		return []string{"x", "y"}, []*Attribute{aInt("axis", drawInt(t, "axis", -5, 5))}
	},
	"Pad": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("pads", drawInts(t, "pads", drawIntN(t, "pads len", 0, 8), -3, 3)...)
		return []string{"x", "pads"}, []*Attribute{aStr("mode", rapid.SampledFrom([]string{"constant", "reflect", "edge", "wrap"}).Draw(t, "mode"))}
	},
	"Squeeze": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("axes", drawInts(t, "axes", drawIntN(t, "axes len", 0, 3), -5, 5)...)
		return []string{"x", "axes"}, nil
	},
	"Unsqueeze": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("axes", drawInts(t, "axes", drawIntN(t, "axes len", 0, 3), -6, 6)...)
		return []string{"x", "axes"}, nil
	},
	"ReduceMean": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("axes", drawInts(t, "axes", drawIntN(t, "axes len", 0, 3), -5, 5)...)
		return []string{"x", "axes"}, []*Attribute{aInt("keepdims", drawInt(t, "keepdims", 0, 1))}
	},
	"Trilu": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.ints("k", drawInt(t, "k", -5, 5))
		return []string{"x", "k"}, []*Attribute{aInt("upper", drawInt(t, "upper", 0, 1))}
	},
	"Gemm": func(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
		b.weight("w", drawInts(t, "w", 2, 0, 4)...)
		return []string{"x", "w"}, []*Attribute{aInt("transA", drawInt(t, "transA", 0, 1)), aInt("transB", drawInt(t, "transB", 0, 1))}
	},
}

// poolAttrs draws a pooling node's attributes.
func poolAttrs(t *rapid.T, b *builder, rank int) ([]string, []*Attribute) {
	sp := max(rank-2, 1)
	attrs := append(windowAttrs(t, sp, false), aInts("kernel_shape", drawInts(t, "kernel", sp, -1, 5)...),
		aInt("ceil_mode", drawInt(t, "ceil", 0, 1)), aInt("count_include_pad", drawInt(t, "include", 0, 1)))
	return []string{"x"}, attrs
}

// windowAttrs draws strides, dilations, pads or auto_pad, and for a
// convolution group, each present or not.
func windowAttrs(t *rapid.T, sp int, conv bool) []*Attribute {
	var attrs []*Attribute
	if rapid.Bool().Draw(t, "has strides") {
		attrs = append(attrs, aInts("strides", drawInts(t, "strides", sp, -1, 3)...))
	}
	if rapid.Bool().Draw(t, "has dilations") {
		attrs = append(attrs, aInts("dilations", drawInts(t, "dilations", sp, -1, 3)...))
	}
	switch rapid.IntRange(0, 2).Draw(t, "padding") {
	case 1:
		attrs = append(attrs, aInts("pads", drawInts(t, "pads", 2*sp, -1, 4)...))
	case 2:
		attrs = append(attrs, aStr("auto_pad", rapid.SampledFrom([]string{"SAME_UPPER", "SAME_LOWER", "VALID", "BAD"}).Draw(t, "auto_pad")))
	}
	if conv && rapid.Bool().Draw(t, "has group") {
		attrs = append(attrs, aInt("group", drawInt(t, "group", -1, 4)))
	}
	return attrs
}

func drawInt(t *rapid.T, label string, lo, hi int64) int64 {
	return rapid.Int64Range(lo, hi).Draw(t, label)
}

func drawIntN(t *rapid.T, label string, lo, hi int) int { return rapid.IntRange(lo, hi).Draw(t, label) }

func drawInts(t *rapid.T, label string, n int, lo, hi int64) []int64 {
	return rapid.SliceOfN(rapid.Int64Range(lo, hi), n, n).Draw(t, label)
}

// TestAttributesRapid: a node with any attribute values and constant
// operands imports to a module or to an error naming the node, never a
// panic; an imported module runs in the interpreter to results or to an
// error, never a panic.
func TestAttributesRapid(t *testing.T) {
	ops := slices.Sorted(maps.Keys(attrOps))
	rapid.Check(t, func(rt *rapid.T) {
		op := rapid.SampledFrom(ops).Draw(rt, "op")
		b := newBuilder(17)
		shape := drawInts(rt, "input", drawIntN(rt, "rank", 1, 4), 1, 5)
		dims := make([]any, len(shape))
		n := int64(1)
		for i, d := range shape {
			dims[i] = int(d)
			n *= d
		}
		b.input("x", TypeFloat, dims...)
		ins, attrs := attrOps[op](rt, b, len(shape))
		b.node(op, ins, []string{"out"}, attrs...)
		b.output("out")
		defer func() {
			if r := recover(); r != nil {
				rt.Fatalf("%s with %v: panic: %v\n%s", op, attrs, r, debug.Stack())
			}
		}()
		mod, err := ImportModel(dialects.NewContext(), b.model(), "fuzz.onnx", "", Options{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("fuzz.onnx: node 0 %q", op+"_out")) {
				rt.Fatalf("%s with %v: the error %v does not name the node", op, attrs, err)
			}
			return
		}
		x, err := interp.FromFloat64s(ir.F32, shape, make([]float64, n))
		if err != nil {
			rt.Fatal(err)
		}
		_, _ = interp.New(mod).Call("main", x)
	})
}
