package sym

import (
	"fmt"
	"strconv"
	"strings"
)

// ShapeDtype is what guards see of one input: its shape and element type
// (spelled as in the IR: "f32", "i64", …).
type ShapeDtype struct {
	Shape []int64
	Dtype string
}

// guardKind says what a Guard tests.
type guardKind uint8

const (
	guardRank  guardKind = iota // argN.rank == R
	guardDim                    // argN.shape[D] == expr
	guardDtype                  // argN.dtype == T
	guardRel                    // a constraint over symbols
)

// Guard is one printable predicate a call's inputs must satisfy for a
// compiled artifact to be valid for it:
//
//	arg0.rank == 2
//	arg0.shape[0] == s0     (binds s0 the first time it is seen)
//	arg0.shape[1] == 128
//	arg0.dtype == f32
//	s0 >= 2
//	s0 == s1
type Guard struct {
	kind  guardKind
	arg   int
	dim   int
	rank  int
	dtype string
	expr  Expr       // guardDim
	rel   Constraint // guardRel
}

// RankGuard is argN.rank == rank.
func RankGuard(arg, rank int) Guard { return Guard{kind: guardRank, arg: arg, rank: rank} }

// DimGuard is argN.shape[dim] == e.
func DimGuard(arg, dim int, e Expr) Guard { return Guard{kind: guardDim, arg: arg, dim: dim, expr: e} }

// DtypeGuard is argN.dtype == dtype.
func DtypeGuard(arg int, dtype string) Guard { return Guard{kind: guardDtype, arg: arg, dtype: dtype} }

// RelGuard is the constraint c over symbols.
func RelGuard(c Constraint) Guard { return Guard{kind: guardRel, rel: c} }

// String prints the guard in the syntax ParseGuard reads.
func (g Guard) String() string {
	switch g.kind {
	case guardRank:
		return fmt.Sprintf("arg%d.rank == %d", g.arg, g.rank)
	case guardDim:
		return fmt.Sprintf("arg%d.shape[%d] == %s", g.arg, g.dim, g.expr)
	case guardDtype:
		return fmt.Sprintf("arg%d.dtype == %s", g.arg, g.dtype)
	}
	return g.rel.String()
}

// ParseGuard reads a guard as Guard.String prints it.
func ParseGuard(text string) (Guard, error) {
	lhs, rhs, ok := strings.Cut(text, " == ")
	argText, field, dotted := strings.Cut(strings.TrimPrefix(lhs, "arg"), ".")
	if !ok || !strings.HasPrefix(lhs, "arg") || !dotted {
		// A relation between sizes; its symbols may start with "arg" too.
		c, err := ParseConstraint(text)
		if err != nil {
			return Guard{}, fmt.Errorf("sym: bad guard %q: %w", Clip(text), err)
		}
		return RelGuard(c), nil
	}
	arg, err := strconv.Atoi(argText)
	if err != nil || arg < 0 {
		return Guard{}, fmt.Errorf("sym: bad guard %q: want argN.rank, argN.shape[D] or argN.dtype on the left", Clip(text))
	}
	switch {
	case field == "rank":
		r, err := strconv.Atoi(rhs)
		if err != nil || r < 0 {
			return Guard{}, fmt.Errorf("sym: bad guard %q: the rank must be a non-negative integer", Clip(text))
		}
		return RankGuard(arg, r), nil
	case field == "dtype":
		return DtypeGuard(arg, rhs), nil
	case strings.HasPrefix(field, "shape[") && strings.HasSuffix(field, "]"):
		d, err := strconv.Atoi(field[len("shape[") : len(field)-1])
		if err != nil || d < 0 {
			return Guard{}, fmt.Errorf("sym: bad guard %q: bad dim index", Clip(text))
		}
		e, err := Parse(rhs)
		if err != nil {
			return Guard{}, fmt.Errorf("sym: bad guard %q: %w", Clip(text), err)
		}
		return DimGuard(arg, d, e), nil
	}
	return Guard{}, fmt.Errorf("sym: bad guard %q: unknown field %q (want rank, shape[D] or dtype)", Clip(text), field)
}

// Guards is the list of guards of a compiled function.
type Guards []Guard

// ParseGuards reads guards printed by Strings.
func ParseGuards(texts []string) (Guards, error) {
	gs := make(Guards, len(texts))
	for i, t := range texts {
		g, err := ParseGuard(t)
		if err != nil {
			return nil, err
		}
		gs[i] = g
	}
	return gs, nil
}

// Strings prints each guard.
func (gs Guards) Strings() []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return out
}

// String prints the guards one per line.
func (gs Guards) String() string { return strings.Join(gs.Strings(), "\n") }

// Failure is a guard that inputs do not satisfy, with the values seen.
type Failure struct {
	Guard Guard
	Got   string // e.g. "64" or "s0 = 1"
}

// Error prints "guard failed: arg0.shape[1] == 128 (got 64)".
func (f *Failure) Error() string { return fmt.Sprintf("guard failed: %s (got %s)", f.Guard, f.Got) }

// Check tests inputs against the guards. Symbols are bound by the first
// guard argN.shape[D] == sK that names them; every guard is then checked
// in order. It returns the symbol values, or the first failure.
func (gs Guards) Check(inputs []ShapeDtype) (map[string]int64, *Failure) {
	env, fails := gs.check(inputs, true)
	if len(fails) > 0 {
		return env, &fails[0]
	}
	return env, nil
}

// Failures returns every guard the inputs fail, for a full report.
func (gs Guards) Failures(inputs []ShapeDtype) []Failure {
	_, fails := gs.check(inputs, false)
	return fails
}

// Explain prints the failed guards one per line, each with the values
// seen ("- arg0.shape[1] == 128 (got 64)"), or "" when all hold: the diff
// a frontend logs when it recompiles.
func (gs Guards) Explain(inputs []ShapeDtype) string {
	var b strings.Builder
	for _, f := range gs.Failures(inputs) {
		fmt.Fprintf(&b, "- %s (got %s)\n", f.Guard, f.Got)
	}
	return b.String()
}

func (gs Guards) check(inputs []ShapeDtype, first bool) (map[string]int64, []Failure) {
	env := map[string]int64{}
	size := func(g Guard) (int64, string, bool) {
		if g.arg >= len(inputs) {
			return 0, fmt.Sprintf("%d inputs", len(inputs)), false
		}
		s := inputs[g.arg].Shape
		if g.dim >= len(s) {
			return 0, fmt.Sprintf("rank %d", len(s)), false
		}
		return s[g.dim], "", true
	}
	for _, g := range gs {
		if name, ok := g.expr.IsSym(); ok && g.kind == guardDim {
			if v, _, ok := size(g); ok {
				if _, bound := env[name]; !bound {
					env[name] = v
				}
			}
		}
	}
	var fails []Failure
	for _, g := range gs {
		if got, ok := g.test(inputs, env, size); !ok {
			fails = append(fails, Failure{Guard: g, Got: got})
			if first {
				break
			}
		}
	}
	return env, fails
}

// test checks one guard, returning what was seen when it fails. The
// text is built only for a failure: a cached call checks every guard.
func (g Guard) test(inputs []ShapeDtype, env map[string]int64, size func(Guard) (int64, string, bool)) (string, bool) {
	if g.kind != guardRel && g.arg >= len(inputs) {
		return fmt.Sprintf("%d inputs", len(inputs)), false
	}
	switch g.kind {
	case guardRank:
		if r := len(inputs[g.arg].Shape); r != g.rank {
			return strconv.Itoa(r), false
		}
		return "", true
	case guardDtype:
		if d := inputs[g.arg].Dtype; d != g.dtype {
			return d, false
		}
		return "", true
	case guardDim:
		v, why, ok := size(g)
		if !ok {
			return why, false
		}
		want, err := g.expr.Eval(env)
		switch {
		case err != nil:
			return err.Error(), false
		case v == want:
			return "", true
		}
		if _, isSym := g.expr.IsSym(); isSym || len(g.expr.Symbols()) == 0 {
			return strconv.FormatInt(v, 10), false
		}
		return fmt.Sprintf("%d, %s", v, bindings(g.expr.Symbols(), env)), false
	}
	holds, err := g.rel.Eval(env)
	switch {
	case err != nil:
		return err.Error(), false
	case holds:
		return "", true
	}
	return bindings(append(g.rel.L.Symbols(), g.rel.R.Symbols()...), env), false
}

// bindings prints "s0 = 3, s1 = 4" for the named symbols, once each.
func bindings(names []string, env map[string]int64) string {
	var parts []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if v, ok := env[n]; ok {
			parts = append(parts, fmt.Sprintf("%s = %d", n, v))
		} else {
			parts = append(parts, n+" unbound")
		}
	}
	return strings.Join(parts, ", ")
}

// DimRef names dim Dim of input Arg; it prints as "Arg:Dim", the syntax of
// graph-symbolize-shapes' dims option.
type DimRef struct{ Arg, Dim int }

// String returns "Arg:Dim".
func (d DimRef) String() string { return fmt.Sprintf("%d:%d", d.Arg, d.Dim) }

// AutoDynamic decides, after a call whose input shapes (new) differ from
// those a function was compiled for (old), which dims to make symbolic
// when recompiling: every dim whose size changed. Inputs whose rank
// changed contribute nothing (a rank is never symbolic), and neither do
// inputs present in only one of the two lists.
func AutoDynamic(old, new [][]int64) []DimRef {
	var out []DimRef
	for a := range min(len(old), len(new)) {
		if len(old[a]) != len(new[a]) {
			continue
		}
		for d := range old[a] {
			if old[a][d] != new[a][d] {
				out = append(out, DimRef{Arg: a, Dim: d})
			}
		}
	}
	return out
}
