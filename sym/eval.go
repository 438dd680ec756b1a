package sym

import "fmt"

// Eval computes e with symbol values from env. It fails on a symbol env
// lacks and on division by zero.
func (e Expr) Eval(env map[string]int64) (int64, error) {
	s := e.constant()
	for _, t := range e.terms() {
		p := t.coef
		for _, a := range t.mono.atoms {
			v, err := a.eval(env)
			if err != nil {
				return 0, err
			}
			p *= v
		}
		s += p
	}
	return s, nil
}

func (a *atom) eval(env map[string]int64) (int64, error) {
	if a.op == opSym {
		v, ok := env[a.name]
		if !ok {
			return 0, fmt.Errorf("no value for symbol %s", a.name)
		}
		return v, nil
	}
	x, err := a.a.Eval(env)
	if err != nil {
		return 0, err
	}
	y, err := a.b.Eval(env)
	if err != nil {
		return 0, err
	}
	switch a.op {
	case opFloorDiv, opMod:
		if y == 0 {
			return 0, fmt.Errorf("division by zero in %s", a.key)
		}
		if a.op == opMod {
			return floorMod(x, y), nil
		}
		return floorDiv(x, y), nil
	case opMax:
		return max(x, y), nil
	}
	return min(x, y), nil
}

// Subst replaces symbols by expressions (those absent from m stay) and
// simplifies the result under f.
func (f *Facts) Subst(e Expr, m map[string]Expr) Expr {
	out := Const(e.constant())
	for _, t := range e.terms() {
		p := Const(t.coef)
		for _, a := range t.mono.atoms {
			p = Mul(p, f.substAtom(a, m))
		}
		out = Add(out, p)
	}
	return out
}

func (f *Facts) substAtom(a *atom, m map[string]Expr) Expr {
	if a.op == opSym {
		if r, ok := m[a.name]; ok {
			return r
		}
		return Sym(a.name)
	}
	return f.apply(a.op, f.Subst(a.a, m), f.Subst(a.b, m))
}

// Subst is (*Facts).Subst under the default facts.
func Subst(e Expr, m map[string]Expr) Expr { return (*Facts)(nil).Subst(e, m) }
