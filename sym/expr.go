// Package sym is a small symbolic algebra for tensor sizes (DESIGN §6).
//
// An Expr is an integer expression over symbols (s0, s1, …) and constants
// built from +, *, floordiv, mod, max and min. Every Expr is kept in one
// canonical simplified form, a sum of products with integer coefficients,
// so that equal sizes compare equal: Equal is a comparison of canonical
// forms, and String prints the form (e.g. "s0*4096 + 7") in a syntax that
// Parse reads back to the same Expr.
//
// Simplification may use facts about the symbols (Facts): lower bounds
// (sizes are ≥ 1 unless zero is allowed) and divisibility ("s0 % 8 == 0").
// The package-level constructors assume the default facts, every symbol
// ≥ 1; methods of *Facts build under other facts.
//
// floordiv and mod round toward negative infinity, as in MLIR's affine
// maps and Python: floordiv(-7, 2) = -4 and mod(-7, 2) = 1.
package sym

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Expr is an immutable symbolic integer expression in canonical form. The
// zero Expr is the constant 0.
type Expr struct{ p *poly }

// poly is the canonical form: Σ coef·mono + c, terms sorted by monomial key,
// no zero coefficients.
type poly struct {
	terms []term
	c     int64
	once  sync.Once
	str   string // String(), computed once
}

// term is coef times the product of atoms.
type term struct {
	coef int64
	mono mono
}

// mono is a product of atoms, sorted by key (repeats are powers).
type mono struct {
	atoms []*atom
	key   string // the atoms' keys joined by "*"
}

// opKind is what an atom is.
type opKind uint8

const (
	opSym opKind = iota
	opFloorDiv
	opMod
	opMax
	opMin
)

var opNames = [...]string{opFloorDiv: "floordiv", opMod: "mod", opMax: "max", opMin: "min"}

// atom is a symbol or an operation the polynomial form cannot expand.
type atom struct {
	op   opKind
	name string // opSym
	a, b Expr   // the others
	key  string // printed form
}

// smallConsts caches the constants sizes use most.
var smallConsts = func() []Expr {
	cs := make([]Expr, 1+smallMax-smallMin)
	for i := range cs {
		if c := int64(i) + smallMin; c != 0 {
			cs[i] = Expr{&poly{c: c}}
		}
	}
	return cs
}()

const smallMin, smallMax = -16, 256

// Const returns the constant c.
func Const(c int64) Expr {
	if smallMin <= c && c <= smallMax {
		return smallConsts[c-smallMin]
	}
	return Expr{&poly{c: c}}
}

// Sym returns the symbol name. Names are identifiers: a letter or '_',
// then letters, digits or '_'.
func Sym(name string) Expr {
	a := &atom{op: opSym, name: name, key: name}
	return mk([]term{{coef: 1, mono: mono{atoms: []*atom{a}, key: name}}}, 0)
}

// mk builds an Expr from canonical terms and a constant.
func mk(terms []term, c int64) Expr {
	if len(terms) == 0 {
		return Const(c)
	}
	return Expr{&poly{terms: terms, c: c}}
}

func (e Expr) terms() []term {
	if e.p == nil {
		return nil
	}
	return e.p.terms
}

func (e Expr) constant() int64 {
	if e.p == nil {
		return 0
	}
	return e.p.c
}

// IsConst reports whether e is a constant, and which.
func (e Expr) IsConst() (int64, bool) {
	if len(e.terms()) > 0 {
		return 0, false
	}
	return e.constant(), true
}

// IsSym reports whether e is exactly one symbol, and its name.
func (e Expr) IsSym() (string, bool) {
	ts := e.terms()
	if len(ts) != 1 || e.constant() != 0 || ts[0].coef != 1 || len(ts[0].mono.atoms) != 1 || ts[0].mono.atoms[0].op != opSym {
		return "", false
	}
	return ts[0].mono.atoms[0].name, true
}

// Equal reports whether a and b have the same canonical form.
func (e Expr) Equal(o Expr) bool {
	if e.p == o.p {
		return true
	}
	if x, ok := e.IsConst(); ok {
		y, ok := o.IsConst()
		return ok && x == y
	}
	return e.String() == o.String()
}

// String prints the canonical form, e.g. "s0*4096 + 7" or "floordiv(s0 + 3, 4)".
func (e Expr) String() string {
	if e.p == nil {
		return "0"
	}
	e.p.once.Do(func() { e.p.str = e.p.format() })
	return e.p.str
}

func (p *poly) format() string {
	var b strings.Builder
	for i, t := range p.terms {
		c := t.coef
		switch {
		case i == 0 && c < 0:
			b.WriteByte('-')
		case i > 0 && c < 0:
			b.WriteString(" - ")
		case i > 0:
			b.WriteString(" + ")
		}
		b.WriteString(t.mono.key)
		if c != 1 && c != -1 {
			b.WriteByte('*')
			b.WriteString(strconv.FormatUint(absU(c), 10))
		}
	}
	switch {
	case len(p.terms) == 0:
		b.WriteString(strconv.FormatInt(p.c, 10))
	case p.c < 0:
		b.WriteString(" - ")
		b.WriteString(strconv.FormatUint(absU(p.c), 10))
	case p.c > 0:
		b.WriteString(" + ")
		b.WriteString(strconv.FormatInt(p.c, 10))
	}
	return b.String()
}

// absU is |c| as an unsigned number, exact for math.MinInt64 too.
func absU(c int64) uint64 {
	if c < 0 {
		return uint64(-c)
	}
	return uint64(c)
}

// Symbols returns the names of the symbols e mentions, sorted.
func (e Expr) Symbols() []string {
	seen := map[string]bool{}
	e.walkSyms(func(n string) { seen[n] = true })
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (e Expr) walkSyms(f func(string)) {
	for _, t := range e.terms() {
		for _, a := range t.mono.atoms {
			if a.op == opSym {
				f(a.name)
			} else {
				a.a.walkSyms(f)
				a.b.walkSyms(f)
			}
		}
	}
}

// Has reports whether e mentions a symbol for which pred holds.
func (e Expr) Has(pred func(name string) bool) bool {
	found := false
	e.walkSyms(func(n string) { found = found || pred(n) })
	return found
}

// Neg returns -e.
func Neg(e Expr) Expr { return Mul(e, Const(-1)) }

// Add returns a + b.
func Add(a, b Expr) Expr { return addScaled(a, b, 1) }

// Sub returns a - b.
func Sub(a, b Expr) Expr { return addScaled(a, b, -1) }

// Sum returns the sum of es (0 when empty).
func Sum(es ...Expr) Expr {
	s := Expr{}
	for _, e := range es {
		s = Add(s, e)
	}
	return s
}

// Product returns the product of es (1 when empty).
func Product(es ...Expr) Expr {
	p := Const(1)
	for _, e := range es {
		p = Mul(p, e)
	}
	return p
}

// MaxTerms bounds the terms of the products ProductWithin and Parse
// expand: a product of n sums of two terms has 2^n of them.
const MaxTerms = 1 << 14

// ProductWithin returns the product of es, or false, without expanding
// it, when the expansion could exceed MaxTerms terms. Sizes of tensors of
// many symbolic dims such as s0 + 1 multiply to exponentially many terms;
// callers treat such a product as unknown.
func ProductWithin(es ...Expr) (Expr, bool) {
	n := 1
	for _, e := range es {
		if n *= len(e.terms()) + 1; n > MaxTerms {
			return Expr{}, false
		}
	}
	return Product(es...), true
}

// addScaled returns a + k·b, merging terms with equal monomials.
func addScaled(a, b Expr, k int64) Expr {
	ta, tb := a.terms(), b.terms()
	out := make([]term, 0, len(ta)+len(tb))
	i, j := 0, 0
	for i < len(ta) || j < len(tb) {
		switch {
		case j == len(tb) || (i < len(ta) && ta[i].mono.key < tb[j].mono.key):
			out = append(out, ta[i])
			i++
		case i == len(ta) || tb[j].mono.key < ta[i].mono.key:
			if c := tb[j].coef * k; c != 0 {
				out = append(out, term{c, tb[j].mono})
			}
			j++
		default:
			if c := ta[i].coef + tb[j].coef*k; c != 0 {
				out = append(out, term{c, ta[i].mono})
			}
			i++
			j++
		}
	}
	return mk(out, a.constant()+k*b.constant())
}

// Mul returns a · b, expanded into a sum of products.
func Mul(a, b Expr) Expr {
	if c, ok := b.IsConst(); ok {
		return scale(a, c)
	}
	if c, ok := a.IsConst(); ok {
		return scale(b, c)
	}
	// (Σ ta + ca)(Σ tb + cb) = Σ ta·tb + cb·Σ ta + ca·Σ tb + ca·cb
	ts := make([]term, 0, len(a.terms())*len(b.terms())+len(a.terms())+len(b.terms()))
	for _, x := range a.terms() {
		ts = append(ts, term{x.coef * b.constant(), x.mono})
		for _, y := range b.terms() {
			ts = append(ts, term{x.coef * y.coef, mulMono(x.mono, y.mono)})
		}
	}
	for _, y := range b.terms() {
		ts = append(ts, term{y.coef * a.constant(), y.mono})
	}
	return normalize(ts, a.constant()*b.constant())
}

// normalize sorts terms by monomial, merges equal monomials and drops zero
// coefficients.
func normalize(ts []term, c int64) Expr {
	slices.SortStableFunc(ts, func(x, y term) int { return cmp.Compare(x.mono.key, y.mono.key) })
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].mono.key == t.mono.key {
			out[n-1].coef += t.coef
			continue
		}
		out = append(out, t)
	}
	ts = out
	out = ts[:0]
	for _, t := range ts {
		if t.coef != 0 {
			out = append(out, t)
		}
	}
	return mk(out, c)
}

// scale returns c·e.
func scale(e Expr, c int64) Expr {
	switch c {
	case 0:
		return Expr{}
	case 1:
		return e
	}
	ts := make([]term, len(e.terms()))
	for i, t := range e.terms() {
		ts[i] = term{t.coef * c, t.mono}
	}
	return mk(ts, e.constant()*c)
}

func mulMono(x, y mono) mono {
	atoms := make([]*atom, 0, len(x.atoms)+len(y.atoms))
	atoms = append(append(atoms, x.atoms...), y.atoms...)
	slices.SortStableFunc(atoms, func(p, q *atom) int { return cmp.Compare(p.key, q.key) })
	return newMono(atoms)
}

func newMono(atoms []*atom) mono {
	keys := make([]string, len(atoms))
	for i, a := range atoms {
		keys[i] = a.key
	}
	return mono{atoms: atoms, key: strings.Join(keys, "*")}
}

// atomExpr returns the Expr that is just the atom op(a, b).
func atomExpr(op opKind, a, b Expr) Expr {
	at := &atom{op: op, a: a, b: b, key: opNames[op] + "(" + a.String() + ", " + b.String() + ")"}
	return mk([]term{{1, newMono([]*atom{at})}}, 0)
}

// single returns the atom e consists of, if e is exactly one atom.
func (e Expr) single() (*atom, bool) {
	ts := e.terms()
	if len(ts) != 1 || e.constant() != 0 || ts[0].coef != 1 || len(ts[0].mono.atoms) != 1 {
		return nil, false
	}
	return ts[0].mono.atoms[0], true
}

// FloorDiv returns floor(a / b) under the default facts.
func FloorDiv(a, b Expr) Expr { return (*Facts)(nil).FloorDiv(a, b) }

// Mod returns a - b·floor(a / b) under the default facts.
func Mod(a, b Expr) Expr { return (*Facts)(nil).Mod(a, b) }

// Max returns the larger of a and b under the default facts.
func Max(a, b Expr) Expr { return (*Facts)(nil).Max(a, b) }

// Min returns the smaller of a and b under the default facts.
func Min(a, b Expr) Expr { return (*Facts)(nil).Min(a, b) }

// floorDiv and floorMod are integer floor division and modulo (b ≠ 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - b*floorDiv(a, b) }

func gcd(a, b int64) int64 {
	a, b = int64(absU(a)), int64(absU(b))
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
