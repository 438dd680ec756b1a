package sym

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Parse reads an expression in the syntax String prints: integers,
// symbols, + - * and parentheses, and the calls floordiv(a, b), mod(a, b),
// max(a, b), min(a, b). The result is simplified under the default facts.
// Text whose coefficients could leave the int64 range while it is
// simplified (beyond ±2^62) is an error, not a wrapped result, and so are
// parentheses and calls nested more than MaxDepth deep (sizes do not nest
// that far; the bound keeps hostile text from exhausting the stack) and
// floordiv or mod by the constant 0.
func Parse(text string) (Expr, error) { return (*Facts)(nil).Parse(text) }

// Parse is the package-level Parse, simplifying under f.
func (f *Facts) Parse(text string) (Expr, error) {
	p := &parser{src: text, f: f}
	e, err := p.sum()
	if err == nil && p.skip() < len(p.src) {
		err = p.errorf("unexpected %q", Clip(p.src[p.pos:]))
	}
	if err != nil {
		return Expr{}, err
	}
	return e, nil
}

// MaxDepth bounds how deeply Parse lets parentheses and calls nest.
const MaxDepth = 200

// parser is a recursive-descent parser over src.
type parser struct {
	src   string
	pos   int
	f     *Facts
	depth int // parentheses and calls open at pos
}

// enter counts one more level of nesting, failing beyond MaxDepth.
func (p *parser) enter() error {
	if p.depth++; p.depth > MaxDepth {
		return p.errorf("parentheses and calls nested deeper than %d", MaxDepth)
	}
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("sym: parsing %q at offset %d: %s", Clip(p.src), p.pos, fmt.Sprintf(format, args...))
}

// skip moves past spaces and returns the position.
func (p *parser) skip() int {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
	return p.pos
}

// eat consumes c if it is next.
func (p *parser) eat(c byte) bool {
	if p.skip() < len(p.src) && p.src[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// sum := product (('+' | '-') product)*
//
// The products' terms are gathered and merged once at the end, so a long
// sum costs n log n, not n² as adding one product at a time would.
func (p *parser) sum() (Expr, error) {
	e, err := p.product()
	if err != nil {
		return Expr{}, err
	}
	ts := slices.Clone(e.terms())
	c, mag, single := e.constant(), magnitude(e), true
	for {
		var k int64
		switch {
		case p.eat('+'):
			k = 1
		case p.eat('-'):
			k = -1
		default:
			if single {
				return e, nil
			}
			return normalize(ts, c), nil
		}
		x, err := p.product()
		if err != nil {
			return Expr{}, err
		}
		mag += magnitude(x)
		if err := p.fits(mag); err != nil {
			return Expr{}, err
		}
		single = false
		for _, t := range x.terms() {
			ts = append(ts, term{k * t.coef, t.mono})
		}
		c += k * x.constant()
	}
}

// product := unary ('*' unary)*
func (p *parser) product() (Expr, error) {
	e, err := p.unary()
	for err == nil && p.eat('*') {
		var x Expr
		if x, err = p.unary(); err == nil {
			if err = p.fits(magnitude(e) * magnitude(x)); err == nil {
				// (s0 + 1)*(s1 + 1)*… would take time and memory
				// exponential in the text's length.
				if (len(e.terms())+1)*(len(x.terms())+1) > MaxTerms {
					return Expr{}, p.errorf("the product expands to more than %d terms", MaxTerms)
				}
				e = Mul(e, x)
			}
		}
	}
	return e, err
}

// unary := '-'* primary (a loop: a long run of minus signs costs no stack)
func (p *parser) unary() (Expr, error) {
	neg := false
	for p.eat('-') {
		neg = !neg
	}
	e, err := p.primary()
	if neg {
		e = Neg(e)
	}
	return e, err
}

// primary := integer | symbol | call | '(' sum ')'
func (p *parser) primary() (Expr, error) {
	start := p.skip()
	if p.eat('(') {
		if err := p.enter(); err != nil {
			return Expr{}, err
		}
		defer func() { p.depth-- }()
		e, err := p.sum()
		if err == nil && !p.eat(')') {
			err = p.errorf("expected ')'")
		}
		return e, err
	}
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
	}
	if p.pos > start {
		v, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
		if err != nil {
			return Expr{}, p.errorf("bad integer %q", Clip(p.src[start:p.pos]))
		}
		return Const(v), nil
	}
	for p.pos < len(p.src) && isIdent(p.src[p.pos]) {
		p.pos++
	}
	name := p.src[start:p.pos]
	if name == "" {
		if p.pos == len(p.src) {
			return Expr{}, p.errorf("unexpected end")
		}
		return Expr{}, p.errorf("unexpected %q", p.src[p.pos:p.pos+1])
	}
	if !p.eat('(') {
		return Sym(name), nil
	}
	op, ok := map[string]func(a, b Expr) Expr{
		"floordiv": p.f.FloorDiv, "mod": p.f.Mod, "max": p.f.Max, "min": p.f.Min,
	}[name]
	if !ok {
		return Expr{}, p.errorf("unknown function %s (want floordiv, mod, max or min)", name)
	}
	if err := p.enter(); err != nil {
		return Expr{}, err
	}
	defer func() { p.depth-- }()
	a, err := p.sum()
	if err != nil {
		return Expr{}, err
	}
	if !p.eat(',') {
		return Expr{}, p.errorf("expected ',' in %s(…)", name)
	}
	bpos := p.skip()
	b, err := p.sum()
	if err != nil {
		return Expr{}, err
	}
	if c, ok := b.IsConst(); ok && c == 0 && (name == "floordiv" || name == "mod") {
		p.pos = bpos
		return Expr{}, p.errorf("%s by zero", name)
	}
	if !p.eat(')') {
		return Expr{}, p.errorf("expected ')' closing %s(…)", name)
	}
	// Simplification may multiply a divisor into a nested one's
	// (floordiv(floordiv(x, k), c) = floordiv(x, k·c)).
	if err := p.fits((magnitude(a) + 1) * (magnitude(b) + 1)); err != nil {
		return Expr{}, err
	}
	return op(a, b), nil
}

// maxMagnitude bounds the magnitude (see magnitude) of what the parser
// builds, so that no coefficient or constant wraps around while the
// expression is simplified.
const maxMagnitude = 1 << 62

// fits reports an error when a bound on the magnitude of the next
// expression to build exceeds maxMagnitude.
func (p *parser) fits(bound float64) error {
	if bound > maxMagnitude {
		return p.errorf("integer overflow: the expression's coefficients exceed 2^62")
	}
	return nil
}

// magnitude bounds the absolute values of e's coefficients and constants,
// those inside its atoms included: the constant's magnitude plus, for each
// term, the coefficient's times its atoms' magnitudes (an atom's is 1 for a
// symbol, else its operands' plus one). The magnitude of a sum is at most
// the sum of its operands', of a product at most their product.
func magnitude(e Expr) float64 {
	m := math.Abs(float64(e.constant()))
	for _, t := range e.terms() {
		c := math.Abs(float64(t.coef))
		for _, a := range t.mono.atoms {
			if a.op != opSym {
				c *= magnitude(a.a) + magnitude(a.b) + 1
			}
		}
		m += c
	}
	return m
}

// Clip shortens text longer than 100 bytes for an error message: its
// start and its end, joined by "…" (hostile text may be megabytes long).
func Clip(text string) string {
	if len(text) <= 100 {
		return text
	}
	return text[:60] + "…" + text[len(text)-30:]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdent(c byte) bool {
	return isDigit(c) || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
