package ir_test

import (
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/ir/irgen"
	"pgregory.net/rapid"
)

// TestPrintParseIdentity checks print∘parse is the identity on printed
// modules: print(parse(print(m))) == print(m), in every print mode.
func TestPrintParseIdentity(t *testing.T) {
	modes := []struct {
		name string
		opts ir.PrintOptions
	}{
		{"generic", ir.PrintOptions{Generic: true}},
		{"default", ir.PrintOptions{}},
		{"debuginfo", ir.PrintOptions{Generic: true, DebugInfo: true}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				ctx := newUnregisteredContext()
				m := irgen.Module(ctx).Draw(t, "module")
				want := ir.Sprint(m, mode.opts)
				back, err := ir.Parse(ctx, want, ir.ParseOptions{Filename: "gen.mlir"})
				if err != nil {
					t.Fatalf("parse of printed module: %v\n%s", err, want)
				}
				if got := ir.Sprint(back, mode.opts); got != want {
					t.Fatalf("print(parse(print(m))) != print(m)\n%s\nprinted:\n%s", lineDiff(want, got), want)
				}
			})
		})
	}
}

// TestTypeRoundTrip checks that every generated type prints to text that
// parses back to the same uniqued type.
func TestTypeRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		typ := irgen.Type().Draw(t, "type")
		src := `"t.op"() : () -> (` + typ.String() + ")"
		m, err := ir.Parse(newUnregisteredContext(), src, ir.ParseOptions{Filename: "type.mlir"})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if got := m.Region(0).Front().First().Result(0).Type(); got != typ {
			t.Fatalf("type %s parsed back as %s", typ, got)
		}
	})
}

// TestAttributeRoundTrip checks that every generated attribute parses back
// to an equal attribute.
func TestAttributeRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := irgen.Attribute().Draw(t, "attr")
		src := `"t.op"() {a = ` + a.String() + "} : () -> ()"
		m, err := ir.Parse(newUnregisteredContext(), src, ir.ParseOptions{Filename: "attr.mlir"})
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		got := m.Region(0).Front().First().Attributes().Get("a")
		if got.String() != a.String() {
			t.Fatalf("attribute %s parsed back as %s", a, got)
		}
	})
}
