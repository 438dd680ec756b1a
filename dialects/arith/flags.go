package arith

import (
	"fmt"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// bitEnum describes one of arith's flag attributes, #arith.fastmath<...> and
// #arith.overflow<...>. Strata keeps them as ir.OpaqueAttr text; this type
// reads, checks and writes that text the way upstream prints it.
type bitEnum struct {
	prop     string   // the property name: "fastmath", "overflowFlags"
	keyword  string   // the custom-syntax keyword: "fastmath", "overflow"
	mnemonic string   // the attribute prefix: "#arith.fastmath"
	flags    []string // flag names, bit i = flags[i]
	all      string   // the spelling of every flag at once, "" if none
	sep      string   // separator upstream prints between flags
}

var (
	fastMath = &bitEnum{
		prop: FastMathAttr, keyword: "fastmath", mnemonic: "#arith.fastmath",
		flags: []string{"reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"},
		all:   "fast", sep: ",",
	}
	overflow = &bitEnum{
		prop: "overflowFlags", keyword: "overflow", mnemonic: "#arith.overflow",
		flags: []string{"nsw", "nuw"}, sep: ", ",
	}
)

// FastMathNone is the default #arith.fastmath<none> property value.
var FastMathNone = fastMath.attr(0)

// OverflowNone is the default #arith.overflow<none> property value.
var OverflowNone = overflow.attr(0)

// FastMathAttr is the property holding a float op's #arith.fastmath flags,
// in arith's ops and in the math dialect's float ops.
const FastMathAttr = "fastmath"

// FastMath returns the #arith.fastmath attribute with the named flags
// ("fast" and "none" included), spelled as upstream prints it.
func FastMath(flags ...string) (ir.OpaqueAttr, error) {
	m, err := fastMath.maskOf(flags)
	return fastMath.attr(m), err
}

// HasFastMath reports whether op's fastmath property sets flag ("afn",
// "nnan", …; "fast" sets them all).
func HasFastMath(op *ir.Operation, flag string) bool {
	a := op.Attr(FastMathAttr)
	if a == nil {
		return false
	}
	m, err := fastMath.mask(a)
	want, err2 := fastMath.maskOf([]string{flag})
	return err == nil && err2 == nil && want != 0 && m&want == want
}

// ParseFastMath reads an optional `fastmath<flags>` clause into st's
// properties; without it the property takes its default, none, as
// upstream's parser sets it.
func ParseFastMath(p *ir.Parser, st *ir.OperationState) error {
	return fastMath.parse(p, st, true)
}

// PrintFastMath writes " fastmath<flags>" unless op's flags are none.
func PrintFastMath(p *ir.Printer, op *ir.Operation) { fastMath.print(p, op) }

// VerifyFastMath checks op's fastmath property, if it has one.
func VerifyFastMath(op *ir.Operation) error { return fastMath.verify(op) }

// maskOf returns the bits spelled by names.
func (e *bitEnum) maskOf(names []string) (uint, error) {
	var m uint
	for _, n := range names {
		switch {
		case n == "none":
		case n == e.all && e.all != "":
			m |= 1<<len(e.flags) - 1
		default:
			i := indexOf(e.flags, n)
			if i < 0 {
				return 0, fmt.Errorf("unknown %s flag '%s'", e.keyword, n)
			}
			m |= 1 << i
		}
	}
	return m, nil
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// body spells the flags of m as upstream prints them inside <...>.
func (e *bitEnum) body(m uint) string {
	if m == 0 {
		return "none"
	}
	if e.all != "" && m == 1<<len(e.flags)-1 {
		return e.all
	}
	var names []string
	for i, n := range e.flags {
		if m&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, e.sep)
}

// attr returns the property value for m.
func (e *bitEnum) attr(m uint) ir.OpaqueAttr {
	return ir.OpaqueAttr{Text: e.mnemonic + "<" + e.body(m) + ">"}
}

// mask reads the flags of a property value; a missing value is none.
func (e *bitEnum) mask(a ir.Attribute) (uint, error) {
	if a == nil {
		return 0, nil
	}
	o, ok := a.(ir.OpaqueAttr)
	body, trimmed := strings.CutPrefix(o.Text, e.mnemonic+"<")
	body, closed := strings.CutSuffix(body, ">")
	if !ok || !trimmed || !closed {
		return 0, fmt.Errorf("attribute '%s' must be %s<...>, but got %s", e.prop, e.mnemonic, a)
	}
	names := strings.Split(body, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return e.maskOf(names)
}

// parse reads the optional custom syntax "keyword<flag, ...>" into st's
// properties; with def, a missing clause sets the default none, as
// upstream's parser does for properties with a default value.
func (e *bitEnum) parse(p *ir.Parser, st *ir.OperationState, def bool) error {
	if !p.ConsumeIf(e.keyword) {
		if def {
			st.Properties = st.Properties.With(e.prop, e.attr(0))
		}
		return p.Err()
	}
	if err := p.Expect("<"); err != nil {
		return err
	}
	var names []string
	pos := p.Pos()
	for {
		n, err := p.ParseKeyword()
		if err != nil {
			return err
		}
		names = append(names, n)
		if !p.ConsumeIf(",") {
			break
		}
	}
	if err := p.Expect(">"); err != nil {
		return err
	}
	m, err := e.maskOf(names)
	if err != nil {
		return p.ErrorAt(pos, "%v", err)
	}
	st.Properties = st.Properties.With(e.prop, e.attr(m))
	return nil
}

// print writes " keyword<flags>" unless the op's flags are none.
func (e *bitEnum) print(p *ir.Printer, op *ir.Operation) {
	a := op.Properties().Get(e.prop)
	m, err := e.mask(a)
	switch {
	case err != nil: // unverified IR: show the text as it is
		p.Write(" " + e.keyword + strings.TrimPrefix(a.String(), e.mnemonic))
	case m != 0:
		p.Write(" " + e.keyword + "<" + e.body(m) + ">")
	}
}

// verify checks the property's value, if present.
func (e *bitEnum) verify(op *ir.Operation) error {
	_, err := e.mask(op.Properties().Get(e.prop))
	return err
}

// roundingModes are the values of truncf's optional roundingmode property
// (an i32), in upstream's llvm::RoundingMode-based encoding.
var roundingModes = []string{"to_nearest_even", "downward", "upward", "toward_zero", "to_nearest_away"}
