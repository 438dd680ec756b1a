package sym

import (
	"fmt"
	"strings"
)

// Rel is the relation of a Constraint.
type Rel uint8

// The relations, printed as in Go.
const (
	EQ Rel = iota // ==
	NE            // !=
	GE            // >=
	GT            // >
	LE            // <=
	LT            // <
)

var relNames = [...]string{EQ: "==", NE: "!=", GE: ">=", GT: ">", LE: "<=", LT: "<"}

// String returns the relation's operator, "==" to "<".
func (r Rel) String() string { return relNames[r] }

// Constraint is a relation between two sizes that must hold at run time,
// such as s0 == s1 where two broadcast dims meet.
type Constraint struct {
	L   Expr
	Rel Rel
	R   Expr
}

// Eq returns the constraint l == r.
func Eq(l, r Expr) Constraint { return Constraint{L: l, Rel: EQ, R: r} }

// String prints "l == r".
func (c Constraint) String() string { return c.L.String() + " " + c.Rel.String() + " " + c.R.String() }

// Eval reports whether c holds for the symbol values in env.
func (c Constraint) Eval(env map[string]int64) (bool, error) {
	l, err := c.L.Eval(env)
	if err != nil {
		return false, err
	}
	r, err := c.R.Eval(env)
	if err != nil {
		return false, err
	}
	switch c.Rel {
	case EQ:
		return l == r, nil
	case NE:
		return l != r, nil
	case GE:
		return l >= r, nil
	case GT:
		return l > r, nil
	case LE:
		return l <= r, nil
	}
	return l < r, nil
}

// Decide tells whether c always holds (true, true), never holds
// (false, true), or depends on the symbols' values (_, false) under f.
func (f *Facts) Decide(c Constraint) (holds, known bool) {
	d := Sub(c.L, c.R) // the relation is d rel 0
	lo, loOK := f.lowerBound(d)
	hi, hiOK := f.upperBound(d)
	if k, ok := d.IsConst(); ok {
		lo, loOK, hi, hiOK = k, true, k, true
	}
	if c.Rel == EQ || c.Rel == NE {
		// A difference that is a non-zero constant, or whose terms all have
		// a common factor that does not divide the constant, is never zero.
		never := (loOK && lo > 0) || (hiOK && hi < 0) || !zeroPossible(f, d)
		always := loOK && hiOK && lo == 0 && hi == 0
		switch {
		case always:
			return c.Rel == EQ, true
		case never:
			return c.Rel == NE, true
		}
		return false, false
	}
	// Normalize to x >= k, x being d or, for <= and <, -d.
	k := map[Rel]int64{GE: 0, GT: 1, LE: 0, LT: 1}[c.Rel]
	if c.Rel == LE || c.Rel == LT {
		lo, loOK, hi, hiOK = -hi, hiOK, -lo, loOK
	}
	switch {
	case loOK && lo >= k:
		return true, true
	case hiOK && hi < k:
		return false, true
	}
	return false, false
}

// zeroPossible is false when the non-constant terms of d share a factor g
// (counting known divisibility) that does not divide d's constant.
func zeroPossible(f *Facts, d Expr) bool {
	if len(d.terms()) == 0 {
		return d.constant() == 0
	}
	var g int64
	for _, t := range d.terms() {
		g = gcd(g, t.coef*f.monoMultiple(t.mono))
	}
	return g == 0 || d.constant()%g == 0
}

// ParseConstraint reads "l rel r" as String prints it.
func ParseConstraint(text string) (Constraint, error) {
	for _, r := range []Rel{EQ, NE, GE, LE, GT, LT} { // two-character relations first
		op := " " + r.String() + " "
		l, rhs, ok := strings.Cut(text, op)
		if !ok {
			continue
		}
		le, err := Parse(l)
		if err != nil {
			return Constraint{}, err
		}
		re, err := Parse(rhs)
		if err != nil {
			return Constraint{}, err
		}
		return Constraint{L: le, Rel: r, R: re}, nil
	}
	return Constraint{}, fmt.Errorf("sym: %q is not a constraint (want \"l == r\", !=, >=, >, <= or <)", Clip(text))
}

// Constraints is an ordered set of constraints, without repeats.
type Constraints struct {
	list []Constraint
	seen map[string]bool
}

// Add records c unless it is already there. It reports whether c was new.
// Adding to a nil *Constraints does nothing.
func (cs *Constraints) Add(c Constraint) bool {
	if cs == nil {
		return false
	}
	key := c.String()
	if cs.seen[key] {
		return false
	}
	if c.Rel == EQ && cs.seen[Eq(c.R, c.L).String()] {
		return false
	}
	if cs.seen == nil {
		cs.seen = map[string]bool{}
	}
	cs.seen[key] = true
	cs.list = append(cs.list, c)
	return true
}

// List returns the constraints in the order they were added.
func (cs *Constraints) List() []Constraint {
	if cs == nil {
		return nil
	}
	return cs.list
}

// Len is the number of constraints.
func (cs *Constraints) Len() int { return len(cs.List()) }

// Strings prints each constraint.
func (cs *Constraints) Strings() []string {
	out := make([]string, cs.Len())
	for i, c := range cs.List() {
		out[i] = c.String()
	}
	return out
}

// String prints the constraints separated by commas.
func (cs *Constraints) String() string { return strings.Join(cs.Strings(), ", ") }

// Solve rewrites the equality c as name := value for a symbol that occurs
// in it once, linearly, with coefficient ±1 (and nowhere else): the
// latest such symbol (s2 before s0), so that earlier symbols survive
// unification. It fails for other relations and when no symbol fits.
func (c Constraint) Solve() (name string, value Expr, ok bool) {
	if c.Rel != EQ {
		return "", Expr{}, false
	}
	d := Sub(c.L, c.R)
	counts := map[string]int{}
	d.walkSyms(func(n string) { counts[n]++ })
	best := -1
	for i, t := range d.terms() {
		if t.coef != 1 && t.coef != -1 || len(t.mono.atoms) != 1 || t.mono.atoms[0].op != opSym {
			continue
		}
		n := t.mono.atoms[0].name
		if counts[n] == 1 && (best < 0 || symbolLess(d.terms()[best].mono.atoms[0].name, n)) {
			best = i
		}
	}
	if best < 0 {
		return "", Expr{}, false
	}
	t := d.terms()[best]
	// d = coef·s + rest = 0, so s = -rest/coef = -coef·rest for coef = ±1.
	rest := Sub(d, scale(mk([]term{{1, t.mono}}, 0), t.coef))
	return t.mono.atoms[0].name, scale(rest, -t.coef), true
}

// symbolLess orders names numerically where they differ only in a number
// suffix (s2 < s10), else as strings.
func symbolLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
