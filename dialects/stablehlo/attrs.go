package stablehlo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// opaqueBody returns the text between prefix and the final ">" of op's
// attribute name, which must be an opaque attribute starting with prefix.
func opaqueBody(op *ir.Operation, name, prefix string) (string, error) {
	a := Attr(op, name)
	if a == nil {
		return "", fmt.Errorf("requires attribute '%s'", name)
	}
	o, ok := a.(ir.OpaqueAttr)
	if !ok || !strings.HasPrefix(o.Text, prefix) || !strings.HasSuffix(o.Text, ">") {
		return "", fmt.Errorf("attribute '%s' must be %s...>, got %s", name, prefix, a)
	}
	return strings.TrimSpace(o.Text[len(prefix) : len(o.Text)-1]), nil
}

// Direction returns compare's comparison_direction as a graph.cmp
// predicate (eq, ne, lt, le, gt, ge).
func Direction(op *ir.Operation) (string, error) {
	body, err := opaqueBody(op, "comparison_direction", "#stablehlo<comparison_direction")
	if err != nil {
		return "", err
	}
	switch body {
	case "EQ", "NE", "LT", "LE", "GT", "GE":
		return strings.ToLower(body), nil
	}
	return "", fmt.Errorf("unknown comparison_direction %q", body)
}

// keyLists parses "k1 = [0, 1], k2 = 3, …".
func keyLists(body string) (map[string][]int64, error) {
	out := map[string][]int64{}
	for body = strings.TrimSpace(body); body != ""; {
		key, rest, ok := strings.Cut(body, "=")
		if !ok {
			return nil, fmt.Errorf("expected 'key = value' in %q", body)
		}
		key, rest = strings.TrimSpace(key), strings.TrimSpace(rest)
		var val string
		if strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 0 {
				return nil, fmt.Errorf("unclosed list in %q", rest)
			}
			val, rest = rest[1:end], rest[end+1:]
		} else {
			end := strings.Index(rest, ",")
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		var vs []int64
		for _, f := range strings.Split(val, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad integer %q for %s", f, key)
			}
			vs = append(vs, v)
		}
		out[key] = vs
		rest = strings.TrimSpace(rest)
		rest = strings.TrimPrefix(rest, ",")
		body = strings.TrimSpace(rest)
	}
	return out, nil
}

// Dot is the dot_dimension_numbers of dot_general.
type Dot struct {
	LhsBatch, RhsBatch, LhsContract, RhsContract []int64
}

// DotDims parses op's dot_dimension_numbers.
func DotDims(op *ir.Operation) (Dot, error) {
	body, err := opaqueBody(op, "dot_dimension_numbers", "#stablehlo.dot<")
	if err != nil {
		return Dot{}, err
	}
	kv, err := keyLists(body)
	if err != nil {
		return Dot{}, fmt.Errorf("dot_dimension_numbers: %w", err)
	}
	d := Dot{kv["lhs_batching_dimensions"], kv["rhs_batching_dimensions"], kv["lhs_contracting_dimensions"], kv["rhs_contracting_dimensions"]}
	if len(d.LhsBatch) != len(d.RhsBatch) || len(d.LhsContract) != len(d.RhsContract) {
		return Dot{}, fmt.Errorf("dot_dimension_numbers: lhs and rhs batching (%v, %v) and contracting (%v, %v) dims differ in count",
			d.LhsBatch, d.RhsBatch, d.LhsContract, d.RhsContract)
	}
	return d, nil
}

// Conv is a convolution's dimension numbers: for each operand, where its
// batch (or output-feature) dim, feature (or input-feature) dim and
// spatial dims are.
type Conv struct {
	InBatch, InFeature   int64
	InSpatial            []int64
	KIn, KOut            int64
	KSpatial             []int64
	OutBatch, OutFeature int64
	OutSpatial           []int64
}

// ConvDims parses the compact form [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f].
func ConvDims(op *ir.Operation) (Conv, error) {
	body, err := opaqueBody(op, "dimension_numbers", "#stablehlo.conv<")
	if err != nil {
		return Conv{}, err
	}
	in, rest, ok1 := strings.Cut(body, "x")
	k, out, ok2 := strings.Cut(rest, "->")
	if !ok1 || !ok2 {
		return Conv{}, fmt.Errorf("dimension_numbers %q is not [..]x[..]->[..]", body)
	}
	var c Conv
	parse := func(s string, a, b byte, pa, pb *int64, sp *[]int64) error {
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
			return fmt.Errorf("bad layout %q", s)
		}
		fields := strings.Split(s[1:len(s)-1], ",")
		*pa, *pb = -1, -1
		spatial := map[int64]int64{}
		for i, f := range fields {
			f = strings.TrimSpace(f)
			switch {
			case f == string(a):
				*pa = int64(i)
			case f == string(b):
				*pb = int64(i)
			default:
				n, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					return fmt.Errorf("bad layout entry %q in %q", f, s)
				}
				spatial[n] = int64(i)
			}
		}
		for j := range int64(len(spatial)) {
			pos, ok := spatial[j]
			if !ok {
				return fmt.Errorf("layout %q lacks spatial dim %d", s, j)
			}
			*sp = append(*sp, pos)
		}
		if *pa < 0 || *pb < 0 {
			return fmt.Errorf("layout %q lacks %c or %c", s, a, b)
		}
		return nil
	}
	if err := parse(in, 'b', 'f', &c.InBatch, &c.InFeature, &c.InSpatial); err != nil {
		return Conv{}, err
	}
	if err := parse(k, 'i', 'o', &c.KIn, &c.KOut, &c.KSpatial); err != nil {
		return Conv{}, err
	}
	if err := parse(out, 'b', 'f', &c.OutBatch, &c.OutFeature, &c.OutSpatial); err != nil {
		return Conv{}, err
	}
	if len(c.InSpatial) != len(c.KSpatial) || len(c.InSpatial) != len(c.OutSpatial) {
		return Conv{}, fmt.Errorf("dimension_numbers %q: spatial ranks differ", body)
	}
	return c, nil
}

// Gather is a gather's dimension numbers.
type Gather struct {
	OffsetDims, CollapsedSliceDims, StartIndexMap, OperandBatching, IndicesBatching []int64
	IndexVectorDim                                                                  int64
}

// GatherDims parses op's dimension_numbers.
func GatherDims(op *ir.Operation) (Gather, error) {
	body, err := opaqueBody(op, "dimension_numbers", "#stablehlo.gather<")
	if err != nil {
		return Gather{}, err
	}
	kv, err := keyLists(body)
	if err != nil {
		return Gather{}, fmt.Errorf("dimension_numbers: %w", err)
	}
	g := Gather{OffsetDims: kv["offset_dims"], CollapsedSliceDims: kv["collapsed_slice_dims"],
		StartIndexMap: kv["start_index_map"], OperandBatching: kv["operand_batching_dims"], IndicesBatching: kv["start_indices_batching_dims"]}
	if v := kv["index_vector_dim"]; len(v) == 1 {
		g.IndexVectorDim = v[0]
	} else {
		return Gather{}, fmt.Errorf("dimension_numbers %q: index_vector_dim must be one integer", body)
	}
	return g, nil
}
