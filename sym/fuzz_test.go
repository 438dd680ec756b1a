package sym

import (
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ir/strata/internal/fuzzwatch"
)

// FuzzParse parses arbitrary text as an expression, a constraint and a
// guard. Nothing may panic; what parses must print and parse back to an
// equal value; and an expression's simplified form must evaluate, at a few
// symbol values that satisfy the default facts, to what the text means read
// literally (refEval, an independent evaluator without simplification).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"s0", "s0*4096 + 7", "floordiv(s0*4096 + 7, 4096)", "mod(s0, 8)", "max(s0, s1) - min(s1, 3)",
		"-(s0 - 2)*3", "floordiv(floordiv(s0, 4), 8)", "mod(mod(s0, 16), 4)", "floordiv(5, 0)", "mod(s0, -3)",
		"floordiv(-7, 2)", "s0 == s1", "s0*4 >= s2", "s0 != 0", "arg0.shape[1] == s0*2", "arg0.rank == 2",
		"arg1.dtype == bf16", "9223372036854775807 + 1", "(((s0)))", "s0 % 3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		defer fuzzwatch.Start(text)()
		if g, err := ParseGuard(text); err == nil {
			back, err := ParseGuard(g.String())
			if err != nil || back.String() != g.String() {
				t.Fatalf("guard %q prints as %q, which parses as %v, %v", text, g, back, err)
			}
		}
		if c, err := ParseConstraint(text); err == nil {
			back, err := ParseConstraint(c.String())
			if err != nil || back.String() != c.String() {
				t.Fatalf("constraint %q prints as %q, which parses as %v, %v", text, c, back, err)
			}
		}
		e, err := Parse(text)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sym: parsing ") {
				t.Fatalf("error %q does not name the parse", err)
			}
			return
		}
		back, err := Parse(e.String())
		if err != nil || !back.Equal(e) {
			t.Fatalf("%q prints as %q, which parses as %v, %v", text, e, back, err)
		}
		for _, base := range []int64{1, 2, 7, 64} {
			env := map[string]int64{}
			for i, name := range e.Symbols() {
				env[name] = base + int64(i)*3
			}
			want, ok := refEval(text, env)
			if !ok {
				continue // division by zero, overflow or a large value: no reference
			}
			got, err := e.Eval(env)
			if err != nil || got != want {
				t.Fatalf("%q simplifies to %s, which at %v is %d (%v); read literally it is %d", text, e, env, got, err, want)
			}
		}
	})
}

// refEval evaluates text in the grammar Parse reads, literally and without
// simplification. ok is false on a syntax error, a missing symbol, a
// division by zero or a value beyond ±2^40 anywhere (so that no int64
// arithmetic on the simplified side can have wrapped either).
func refEval(text string, env map[string]int64) (v int64, ok bool) {
	r := &refParser{s: text, env: env, ok: true}
	v = r.sum()
	r.space()
	return v, r.ok && r.i == len(r.s)
}

type refParser struct {
	s   string
	i   int
	env map[string]int64
	ok  bool
}

const refLimit = 1 << 40

func (r *refParser) check(v int64) int64 {
	if v > refLimit || v < -refLimit {
		r.ok = false
	}
	return v
}

func (r *refParser) space() {
	for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t') {
		r.i++
	}
}

func (r *refParser) eat(c byte) bool {
	r.space()
	if r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *refParser) sum() int64 {
	v := r.product()
	for r.ok {
		switch {
		case r.eat('+'):
			v = r.check(v + r.product())
		case r.eat('-'):
			v = r.check(v - r.product())
		default:
			return v
		}
	}
	return 0
}

func (r *refParser) product() int64 {
	v := r.unary()
	for r.ok && r.eat('*') {
		w := r.unary()
		if w != 0 && (v > refLimit/absI(w) || v < -refLimit/absI(w)) {
			r.ok = false
			return 0
		}
		v *= w
	}
	return v
}

func absI(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func (r *refParser) unary() int64 {
	if r.eat('-') {
		return -r.unary()
	}
	return r.primary()
}

func (r *refParser) primary() int64 {
	if !r.ok {
		return 0
	}
	if r.eat('(') {
		v := r.sum()
		if !r.eat(')') {
			r.ok = false
		}
		return v
	}
	start := r.i
	for r.i < len(r.s) && (isIdent(r.s[r.i])) {
		r.i++
	}
	word := r.s[start:r.i]
	if word == "" {
		r.ok = false
		return 0
	}
	if isDigit(word[0]) {
		n, err := strconv.ParseInt(word, 10, 64)
		if err != nil {
			r.ok = false
			return 0
		}
		return r.check(n)
	}
	if !r.eat('(') {
		v, found := r.env[word]
		r.ok = r.ok && found
		return v
	}
	a := r.sum()
	if !r.eat(',') {
		r.ok = false
		return 0
	}
	b := r.sum()
	if !r.eat(')') || !r.ok {
		r.ok = false
		return 0
	}
	switch word {
	case "floordiv", "mod":
		if b == 0 {
			r.ok = false
			return 0
		}
		q := a / b
		if a%b != 0 && (a < 0) != (b < 0) {
			q--
		}
		if word == "mod" {
			return a - b*q
		}
		return q
	case "max":
		return max(a, b)
	case "min":
		return min(a, b)
	}
	r.ok = false
	return 0
}
