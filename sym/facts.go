package sym

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Facts are what is known about symbols: a lower bound for each (sizes are
// ≥ 1 by default, ≥ 0 with AllowZero) and divisibility. Simplification
// under facts is exact for every assignment of values that satisfies them.
// A nil *Facts holds the defaults.
type Facts struct {
	// AllowZero makes the default lower bound 0 instead of 1.
	AllowZero bool
	min       map[string]int64
	div       map[string]int64
}

// SetMin records name ≥ lo.
func (f *Facts) SetMin(name string, lo int64) {
	if f.min == nil {
		f.min = map[string]int64{}
	}
	f.min[name] = lo
}

// SetMultiple records name % k == 0 (k > 0).
func (f *Facts) SetMultiple(name string, k int64) {
	if k <= 0 {
		return
	}
	if f.div == nil {
		f.div = map[string]int64{}
	}
	f.div[name] = k
}

// MinOf returns the lower bound of the symbol name.
func (f *Facts) MinOf(name string) int64 {
	if f != nil {
		if lo, ok := f.min[name]; ok {
			return lo
		}
		if f.AllowZero {
			return 0
		}
	}
	return 1
}

// MultipleOf returns the largest known k with name % k == 0 (1 when none).
func (f *Facts) MultipleOf(name string) int64 {
	if f != nil {
		if k, ok := f.div[name]; ok {
			return k
		}
	}
	return 1
}

// Holds reports whether env satisfies the facts.
func (f *Facts) Holds(env map[string]int64) bool {
	for n, v := range env {
		if v < f.MinOf(n) || v%f.MultipleOf(n) != 0 {
			return false
		}
	}
	return true
}

// String lists the non-default facts, e.g. "s0 >= 2, s1 % 8 == 0".
func (f *Facts) String() string {
	if f == nil {
		return ""
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(f.min)) {
		parts = append(parts, fmt.Sprintf("%s >= %d", n, f.min[n]))
	}
	for _, n := range slices.Sorted(maps.Keys(f.div)) {
		parts = append(parts, fmt.Sprintf("%s %% %d == 0", n, f.div[n]))
	}
	return strings.Join(parts, ", ")
}

// Simplify rebuilds e under the facts f.
func (f *Facts) Simplify(e Expr) Expr {
	out := Const(e.constant())
	for _, t := range e.terms() {
		m := Const(t.coef)
		for _, a := range t.mono.atoms {
			m = Mul(m, f.atom(a))
		}
		out = Add(out, m)
	}
	return out
}

func (f *Facts) atom(a *atom) Expr {
	if a.op == opSym {
		return Sym(a.name)
	}
	return f.apply(a.op, f.Simplify(a.a), f.Simplify(a.b))
}

// apply builds the binary atom op of x and y, simplified under f.
func (f *Facts) apply(op opKind, x, y Expr) Expr {
	switch op {
	case opFloorDiv:
		return f.FloorDiv(x, y)
	case opMod:
		return f.Mod(x, y)
	case opMax:
		return f.Max(x, y)
	}
	return f.Min(x, y)
}

// FloorDiv returns floor(a / b). Terms of a whose coefficients b divides
// leave the division ((s0*4096 + 7) floordiv 4096 = s0), a common factor
// of the rest and b cancels, and constants fold. Division by the constant
// 0 stays symbolic (Eval reports it).
func (f *Facts) FloorDiv(a, b Expr) Expr {
	c, ok := b.IsConst()
	switch {
	case !ok:
		if lo, ok := f.lowerBound(b); ok && lo >= 1 && a.Equal(b) {
			return Const(1)
		}
		return atomExpr(opFloorDiv, a, b)
	case c == 0:
		return atomExpr(opFloorDiv, a, b)
	case c == 1:
		return a
	case c == -1:
		return Neg(a)
	case c < 0:
		return atomExpr(opFloorDiv, a, b)
	}
	if x, ok := a.IsConst(); ok {
		return Const(floorDiv(x, c))
	}
	// a = c·q + r: floor(a/c) = q + floor(r/c).
	var q, r []term
	for _, t := range a.terms() {
		if t.coef%c == 0 {
			q = append(q, term{t.coef / c, t.mono})
		} else {
			r = append(r, t)
		}
	}
	rc := floorMod(a.constant(), c)
	quot := mk(q, floorDiv(a.constant(), c))
	if len(r) == 0 {
		return quot
	}
	// A common factor g of the rest and c cancels: floor(g·x / g·k) = floor(x / k).
	g := c
	for _, t := range r {
		g = gcd(g, t.coef)
	}
	g = gcd(g, rc)
	rest := mk(r, rc)
	if g > 1 {
		rest, c = exactDiv(rest, g), c/g
	}
	if c == 1 {
		return Add(quot, rest)
	}
	// 0 ≤ rest < c makes the division 0.
	if lo, ok := f.lowerBound(rest); ok && lo >= 0 {
		if hi, ok := f.upperBound(rest); ok && hi < c {
			return quot
		}
	}
	// floor(floor(x/k)/c) = floor(x/(k·c)) for k, c > 0.
	if at, ok := rest.single(); ok && at.op == opFloorDiv {
		if k, ok := at.b.IsConst(); ok && k > 0 {
			return Add(quot, f.FloorDiv(at.a, Const(k*c)))
		}
	}
	return Add(quot, atomExpr(opFloorDiv, rest, Const(c)))
}

// exactDiv divides every coefficient of e by g, which divides them all.
func exactDiv(e Expr, g int64) Expr {
	ts := make([]term, len(e.terms()))
	for i, t := range e.terms() {
		ts[i] = term{t.coef / g, t.mono}
	}
	return mk(ts, e.constant()/g)
}

// Mod returns a mod b, in [0, b) for b > 0. Terms that b divides (known
// divisibility included) drop out: (s0*8) mod 4 = 0, and s0 mod 4 = 0 when
// s0 % 8 == 0.
func (f *Facts) Mod(a, b Expr) Expr {
	c, ok := b.IsConst()
	switch {
	case !ok:
		if lo, ok := f.lowerBound(b); ok && lo >= 1 && a.Equal(b) {
			return Expr{}
		}
		return atomExpr(opMod, a, b)
	case c == 1 || c == -1:
		return Expr{}
	case c <= 0:
		return atomExpr(opMod, a, b)
	}
	if x, ok := a.IsConst(); ok {
		return Const(floorMod(x, c))
	}
	var r []term
	for _, t := range a.terms() {
		k := floorMod(t.coef, c)
		if k == 0 || (t.coef*f.monoMultiple(t.mono))%c == 0 {
			continue
		}
		r = append(r, term{k, t.mono})
	}
	rest := mk(r, floorMod(a.constant(), c))
	if x, ok := rest.IsConst(); ok {
		return Const(x)
	}
	if lo, ok := f.lowerBound(rest); ok && lo >= 0 {
		if hi, ok := f.upperBound(rest); ok && hi < c {
			return rest
		}
	}
	// (x mod k) mod c = x mod c when c divides k.
	if at, ok := rest.single(); ok && at.op == opMod {
		if k, ok := at.b.IsConst(); ok && k > 0 && k%c == 0 {
			return f.Mod(at.a, Const(c))
		}
	}
	return atomExpr(opMod, rest, Const(c))
}

// monoMultiple is a known divisor of a monomial's value.
func (f *Facts) monoMultiple(m mono) int64 {
	k := int64(1)
	for _, a := range m.atoms {
		if a.op == opSym {
			k *= f.MultipleOf(a.name)
		}
	}
	return k
}

// Max returns max(a, b): one of them when the facts order them.
func (f *Facts) Max(a, b Expr) Expr { return f.minMax(opMax, a, b) }

// Min returns min(a, b): one of them when the facts order them.
func (f *Facts) Min(a, b Expr) Expr { return f.minMax(opMin, a, b) }

func (f *Facts) minMax(op opKind, a, b Expr) Expr {
	if a.Equal(b) {
		return a
	}
	if lo, ok := f.lowerBound(Sub(a, b)); ok && lo >= 0 { // a ≥ b
		if op == opMax {
			return a
		}
		return b
	}
	if lo, ok := f.lowerBound(Sub(b, a)); ok && lo >= 0 { // b ≥ a
		if op == opMax {
			return b
		}
		return a
	}
	// Canonical argument order: constants last, others by their text.
	_, aConst := a.IsConst()
	_, bConst := b.IsConst()
	if aConst && !bConst || (aConst == bConst && b.String() < a.String()) {
		a, b = b, a
	}
	return atomExpr(op, a, b)
}

// lowerBound returns a value e never goes below under the facts.
func (f *Facts) lowerBound(e Expr) (int64, bool) { return f.bound(e, false) }

// upperBound returns a value e never exceeds under the facts.
func (f *Facts) upperBound(e Expr) (int64, bool) { return f.bound(e, true) }

// bound bounds a sum term by term: a term's bound needs its monomial's
// lower bound (positive coefficients, for a lower bound) or upper bound.
func (f *Facts) bound(e Expr, upper bool) (int64, bool) {
	lo, loOK, hi, hiOK := f.exprRange(e)
	if upper {
		return hi, hiOK
	}
	return lo, loOK
}

// exprRange bounds e from below and above at once. Computing both in one
// walk keeps nested max and min linear: bounding each atom's operands
// separately for each side would visit a chain of n nested atoms 2^n times.
func (f *Facts) exprRange(e Expr) (lo int64, loOK bool, hi int64, hiOK bool) {
	lo, hi = e.constant(), e.constant()
	loOK, hiOK = true, true
	for _, t := range e.terms() {
		if !loOK && !hiOK {
			break
		}
		l, lok, h, hok := f.monoRange(t.mono)
		if t.coef < 0 {
			l, lok, h, hok = h, hok, l, lok
		}
		lo, loOK = lo+t.coef*l, loOK && lok
		hi, hiOK = hi+t.coef*h, hiOK && hok
	}
	if !loOK {
		lo = 0
	}
	if !hiOK {
		hi = 0
	}
	return lo, loOK, hi, hiOK
}

// monoRange bounds a product of atoms whose lower bounds are ≥ 0.
func (f *Facts) monoRange(m mono) (lo int64, loOK bool, hi int64, hiOK bool) {
	if len(m.atoms) == 1 {
		return f.atomRange(m.atoms[0])
	}
	lo, hi, hiOK = 1, 1, true
	for _, a := range m.atoms {
		l, lok, h, hok := f.atomRange(a)
		if !lok || l < 0 {
			return 0, false, 0, false
		}
		lo *= l
		hi *= h
		hiOK = hiOK && hok
	}
	return lo, true, hi, hiOK
}

// atomRange bounds one atom.
func (f *Facts) atomRange(a *atom) (lo int64, loOK bool, hi int64, hiOK bool) {
	switch a.op {
	case opSym:
		return f.MinOf(a.name), true, 0, false
	case opFloorDiv:
		c, ok := a.b.IsConst()
		if !ok || c <= 0 {
			return 0, false, 0, false
		}
		l, lok, h, hok := f.exprRange(a.a)
		return floorDiv(l, c), lok, floorDiv(h, c), hok
	case opMod:
		c, ok := a.b.IsConst()
		if !ok || c <= 0 {
			return 0, false, 0, false
		}
		return 0, true, c - 1, true
	}
	la, laOK, ha, haOK := f.exprRange(a.a)
	lb, lbOK, hb, hbOK := f.exprRange(a.b)
	if a.op == opMax {
		switch {
		case laOK && lbOK:
			lo, loOK = max(la, lb), true
		case laOK:
			lo, loOK = la, true
		case lbOK:
			lo, loOK = lb, true
		}
		return lo, loOK, max(ha, hb), haOK && hbOK
	}
	switch {
	case haOK && hbOK:
		hi, hiOK = min(ha, hb), true
	case haOK:
		hi, hiOK = ha, true
	case hbOK:
		hi, hiOK = hb, true
	}
	return min(la, lb), laOK && lbOK, hi, hiOK
}
