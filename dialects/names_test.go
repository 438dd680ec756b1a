package dialects_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
)

// opNameConstants reads the Op* string constants declared in file.
func opNameConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Op") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: constant %s is not a string literal", file, n.Name)
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				out[n.Name] = v
			}
		}
	}
	return out
}

// missingOpNames reports, for the dialect d and the constants consts of its
// names.go, the ops without a constant and the constants naming no op.
func missingOpNames(d *ir.Dialect, consts map[string]string) (noConst, noOp []string) {
	named := map[string]bool{}
	for id, v := range consts {
		named[v] = true
		if !slices.ContainsFunc(d.Ops, func(o *ir.OpDef) bool { return o.Name == v }) {
			noOp = append(noOp, id+" = "+strconv.Quote(v))
		}
	}
	for _, o := range d.Ops {
		if !named[o.Name] {
			noConst = append(noConst, o.Name)
		}
	}
	slices.Sort(noOp)
	return noConst, noOp
}

// TestOpNameConstants checks that every op of every dialect has its name
// constant in the dialect's names.go, and that every constant there names
// an op, so that code outside the dialects can name ops by constant.
func TestOpNameConstants(t *testing.T) {
	for _, d := range dialects.All() {
		file := filepath.Join(d.Name, "names.go")
		consts := opNameConstants(t, file)
		noConst, noOp := missingOpNames(d, consts)
		for _, n := range noConst {
			t.Errorf("%s: op %s has no name constant (add it to %s)", d.Name, n, file)
		}
		for _, c := range noOp {
			t.Errorf("%s: constant %s names no op of the dialect", file, c)
		}
	}
	// The check reports a missing constant and a stale one.
	fake := &ir.Dialect{Name: "fake", Ops: []*ir.OpDef{{Name: "fake.a"}, {Name: "fake.b"}}}
	noConst, noOp := missingOpNames(fake, map[string]string{"OpA": "fake.a", "OpC": "fake.c"})
	if !slices.Equal(noConst, []string{"fake.b"}) || !slices.Equal(noOp, []string{`OpC = "fake.c"`}) {
		t.Errorf("missingOpNames(fake) = %v, %v; want [fake.b], [OpC = \"fake.c\"]", noConst, noOp)
	}
}
