package math

import (
	"fmt"
	"strings"

	"github.com/strata-ir/strata/ir"
)

// FastMathAttr is the property holding a float op's #arith.fastmath flags.
const FastMathAttr = "fastmath"

// fastMathFlags are the flags in bit order, the order upstream prints them.
var fastMathFlags = []string{"reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"}

const fastMathAll = 1<<7 - 1 // every flag: spelled "fast"

// FastMathNone is the default #arith.fastmath<none> property value.
var FastMathNone = fastMathAttr(0)

// FastMath returns the #arith.fastmath attribute with the named flags
// ("fast" and "none" included), spelled as upstream prints it.
func FastMath(flags ...string) (ir.OpaqueAttr, error) {
	m, err := fastMathMaskOf(flags)
	return fastMathAttr(m), err
}

func fastMathMaskOf(names []string) (uint, error) {
	var m uint
	for _, n := range names {
		switch n {
		case "none":
		case "fast":
			m |= fastMathAll
		default:
			i := indexOf(fastMathFlags, n)
			if i < 0 {
				return 0, fmt.Errorf("expected one of [none, reassoc, nnan, ninf, nsz, arcp, contract, afn, fast] for fastmath flags, got: %s", n)
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

// fastMathBody spells m as upstream does inside <...>.
func fastMathBody(m uint) string {
	switch m {
	case 0:
		return "none"
	case fastMathAll:
		return "fast"
	}
	var names []string
	for i, n := range fastMathFlags {
		if m&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

func fastMathAttr(m uint) ir.OpaqueAttr {
	return ir.OpaqueAttr{Text: "#arith.fastmath<" + fastMathBody(m) + ">"}
}

// fastMathMask reads a fastmath property value; absent means none.
func fastMathMask(a ir.Attribute) (uint, error) {
	if a == nil {
		return 0, nil
	}
	o, ok := a.(ir.OpaqueAttr)
	body, prefixed := strings.CutPrefix(o.Text, "#arith.fastmath<")
	body, closed := strings.CutSuffix(body, ">")
	if !ok || !prefixed || !closed {
		return 0, fmt.Errorf("attribute '%s' failed to satisfy constraint: Floating point fast math flags", FastMathAttr)
	}
	names := strings.Split(body, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return fastMathMaskOf(names)
}

// parseFastMath reads the optional `fastmath<flags>` clause; without it the
// property takes its default, none, as upstream's parser sets it.
func parseFastMath(p *ir.Parser, st *ir.OperationState) error {
	if !p.ConsumeIf(FastMathAttr) {
		st.Properties = st.Properties.With(FastMathAttr, FastMathNone)
		return p.Err()
	}
	if err := p.Expect("<"); err != nil {
		return err
	}
	pos := p.Pos()
	var names []string
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
	m, err := fastMathMaskOf(names)
	if err != nil {
		return p.ErrorAt(pos, "%v", err)
	}
	st.Properties = st.Properties.With(FastMathAttr, fastMathAttr(m))
	return nil
}

// printFastMath writes ` fastmath<flags>` unless the flags are none.
func printFastMath(p *ir.Printer, op *ir.Operation) {
	a := op.Properties().Get(FastMathAttr)
	m, err := fastMathMask(a)
	switch {
	case err != nil: // unverified IR: show the value as it is
		p.Write(" " + FastMathAttr + strings.TrimPrefix(a.String(), "#arith."+FastMathAttr))
	case m != 0:
		p.Write(" " + FastMathAttr + "<" + fastMathBody(m) + ">")
	}
}
