package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// attrKind is the type an op attribute must have.
type attrKind uint8

const (
	// kindInts is a list of integers: [0, 1] or array<i64: 0, 1>.
	kindInts attrKind = iota
	// kindInt is one integer: 1 : i64.
	kindInt
	// kindFloat is one float: 1.0e-05 : f32.
	kindFloat
	// kindBool is true or false.
	kindBool
	// kindEnum is a string drawn from attrSpec.enum.
	kindEnum
	// kindDense is a dense elements attribute: dense<...> : tensor<...>.
	kindDense
	// kindScalar is an integer or a float (a fill or padding value).
	kindScalar
	// kindString is any string ("world"); the row's verify checks more.
	kindString
)

var kindNames = [...]string{
	kindInts:   "a list of integers ([0, 1] or array<i64: 0, 1>)",
	kindInt:    "an integer (1 : i64)",
	kindFloat:  "a float (1.0e-05 : f32)",
	kindBool:   "a boolean (true or false)",
	kindEnum:   "a string",
	kindDense:  "a dense elements attribute (dense<...> : tensor<...>)",
	kindScalar: "an integer or float scalar",
	kindString: "a string",
}

// attrSpec describes one attribute of an op.
type attrSpec struct {
	name     string
	kind     attrKind
	required bool
	enum     []string // allowed values of a kindEnum attribute
	doc      string
	// def is the value an absent optional attribute stands for, as the
	// accessors (accessors.go) return it: an int64, float64, bool or
	// string; nil when the default is not a constant (attention's scale is
	// 1/√D) or the attribute is required.
	def any
}

// check reports whether a has the kind the spec asks for.
func (s attrSpec) check(a ir.Attribute) error {
	ok := false
	switch s.kind {
	case kindInts:
		_, ok = IntList(a)
	case kindInt:
		v, isInt := a.(ir.IntegerAttr)
		ok = isInt && v.Type != ir.I1 && ir.IsIntOrIndex(v.Type)
	case kindFloat:
		_, ok = a.(ir.FloatAttr)
	case kindBool:
		v, isInt := a.(ir.IntegerAttr)
		ok = isInt && v.Type == ir.I1
	case kindEnum:
		v, isStr := a.(ir.StringAttr)
		if isStr && !slices.Contains(s.enum, v.Value) {
			return fmt.Errorf("attribute '%s' must be one of %s, got %s", s.name, quoteAll(s.enum), a)
		}
		ok = isStr
	case kindDense:
		_, ok = a.(ir.DenseAttr)
	case kindString:
		_, ok = a.(ir.StringAttr)
	case kindScalar:
		switch v := a.(type) {
		case ir.FloatAttr:
			ok = true
		case ir.IntegerAttr:
			ok = ir.IsIntOrIndex(v.Type)
		}
	}
	if !ok {
		want := kindNames[s.kind]
		if s.kind == kindEnum {
			want = "one of " + quoteAll(s.enum)
		}
		return fmt.Errorf("attribute '%s' must be %s, got %s", s.name, want, a)
	}
	return nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = ir.QuoteString(s)
	}
	return strings.Join(q, ", ")
}

// IntList reads an integer-list attribute, given as an ArrayAttr of
// integers ([0, 1]) or as a DenseArrayAttr of integers (array<i64: 0, 1>).
func IntList(a ir.Attribute) ([]int64, bool) {
	switch a := a.(type) {
	case ir.ArrayAttr:
		out := make([]int64, len(a))
		for i, e := range a {
			v, ok := e.(ir.IntegerAttr)
			if !ok || v.Type == ir.I1 || !ir.IsIntOrIndex(v.Type) {
				return nil, false
			}
			out[i] = v.Value
		}
		return out, true
	case ir.DenseArrayAttr:
		if !ir.IsInteger(a.Elem) || a.Elem == ir.I1 {
			return nil, false
		}
		return slices.Clone(a.Values), true
	}
	return nil, false
}

// Ints returns the integer list attribute [vs...] in the canonical spelling
// (an ArrayAttr of i64 integers).
func Ints(vs ...int64) ir.ArrayAttr {
	out := make(ir.ArrayAttr, len(vs))
	for i, v := range vs {
		out[i] = ir.IntegerAttr{Value: v, Type: ir.I64}
	}
	return out
}

// attrView reads an op's validated attributes. Getters return the default
// when the attribute is absent.
type attrView struct{ d ir.DictAttr }

func (a attrView) has(name string) bool { return a.d.Get(name) != nil }

func (a attrView) ints(name string) []int64 {
	vs, _ := IntList(a.d.Get(name))
	return vs
}

func (a attrView) int(name string, def int64) int64 {
	if v, ok := a.d.Get(name).(ir.IntegerAttr); ok {
		return v.Value
	}
	return def
}

func (a attrView) float(name string, def float64) float64 {
	if v, ok := a.d.Get(name).(ir.FloatAttr); ok {
		return v.Value()
	}
	return def
}

func (a attrView) bool(name string) bool {
	v, ok := a.d.Get(name).(ir.IntegerAttr)
	return ok && v.Value != 0
}

func (a attrView) str(name, def string) string {
	if v, ok := a.d.Get(name).(ir.StringAttr); ok {
		return v.Value
	}
	return def
}

// checkAttrs validates props against the op's attribute schema: every
// required attribute present, every present one known and well typed.
// Discardable attributes carry a dialect prefix ("graph.fused"), so an
// unprefixed discardable name is an unknown (probably misspelt) attribute.
func (s *opSpec) checkAttrs(props, discardable ir.DictAttr) error {
	var errs []string
	for _, na := range props {
		spec, ok := s.attr(na.Name)
		if !ok {
			errs = append(errs, s.unknownAttr(na.Name))
			continue
		}
		if err := spec.check(na.Value); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, na := range discardable {
		if !strings.Contains(na.Name, ".") {
			errs = append(errs, s.unknownAttr(na.Name))
		}
	}
	for _, spec := range s.attrs {
		if spec.required && props.Get(spec.name) == nil {
			errs = append(errs, fmt.Sprintf("requires attribute '%s'", spec.name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (s *opSpec) unknownAttr(name string) string {
	if len(s.attrs) == 0 {
		return fmt.Sprintf("unknown attribute '%s' (the op takes no attributes)", name)
	}
	known := make([]string, len(s.attrs))
	for i, a := range s.attrs {
		known[i] = "'" + a.name + "'"
	}
	return fmt.Sprintf("unknown attribute '%s' (expected %s)", name, strings.Join(known, ", "))
}

func (s *opSpec) attr(name string) (attrSpec, bool) {
	for _, a := range s.attrs {
		if a.name == name {
			return a, true
		}
	}
	return attrSpec{}, false
}

// inherentView returns the op's inherent attributes: its properties, plus
// any inherent attribute that was set as a discardable one, and the
// remaining discardable attributes.
func (s *opSpec) inherentView(op *ir.Operation) (props, rest ir.DictAttr) {
	props = op.Properties()
	for _, na := range op.Attributes() {
		if _, known := s.attr(na.Name); known && props.Get(na.Name) == nil {
			props = props.With(na.Name, na.Value)
		} else {
			rest = rest.With(na.Name, na.Value)
		}
	}
	return props, rest
}
