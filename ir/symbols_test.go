package ir

import (
	"slices"
	"testing"
)

const symbolsSrc = `
"test.module"() <{sym_name = "outer"}> ({
  "test.func"() <{sym_name = "f", function_type = () -> (), sym_visibility = "private"}> ({
    "test.use"() <{callee = @g}> : () -> ()
    "test.use"() {refs = [@inner::@h, {x = @f}]} : () -> ()
    "test.return"() : () -> ()
  }) : () -> ()
  "test.func"() <{sym_name = "g", function_type = () -> ()}> ({
    "test.return"() : () -> ()
  }) : () -> ()
  "test.module"() <{sym_name = "inner"}> ({
    "test.func"() <{sym_name = "h", function_type = () -> ()}> ({
      "test.use"() <{callee = @g}> : () -> ()
      "test.return"() : () -> ()
    }) : () -> ()
  }) : () -> ()
}) : () -> ()`

func TestLookupSymbol(t *testing.T) {
	m := mustParse(t, newTestContext(), symbolsSrc)
	uses := findOps(m, "test.use")
	outer := findOp(m, "test.module")
	tests := []struct {
		from *Operation
		ref  SymbolRefAttr
		want string // sym_name of the result, "" for nil
	}{
		{uses[0], SymbolRef("g"), "g"},
		{uses[0], SymbolRefAttr{Root: "inner", Nested: []string{"h"}}, "h"},
		{uses[0], SymbolRefAttr{Root: "inner", Nested: []string{"nope"}}, ""},
		{uses[0], SymbolRefAttr{Root: "f", Nested: []string{"x"}}, ""},
		{uses[0], SymbolRef("h"), ""},
		// The nearest symbol table of the use in @h is @inner, which has no @g.
		{uses[2], SymbolRef("g"), ""},
		{uses[2], SymbolRef("h"), "h"},
		{outer, SymbolRef("inner"), "inner"},
		{m, SymbolRef("outer"), "outer"},
	}
	for _, tc := range tests {
		got := LookupSymbol(tc.from, tc.ref)
		name := ""
		if got != nil {
			name = SymbolName(got)
		}
		if name != tc.want {
			t.Errorf("LookupSymbol(%s from %s) = %q, want %q", tc.ref, tc.from.Name(), name, tc.want)
		}
	}
}

func TestSymbolUses(t *testing.T) {
	m := mustParse(t, newTestContext(), symbolsSrc)
	var got []string
	for _, u := range SymbolUses(m) {
		got = append(got, u.User.Name()+" "+u.Ref.String())
	}
	want := []string{"test.use @g", "test.use @inner::@h", "test.use @f", "test.use @g"}
	if !slices.Equal(got, want) {
		t.Errorf("SymbolUses = %q, want %q", got, want)
	}
	g := LookupSymbol(findOp(m, "test.module"), SymbolRef("g"))
	if n := len(SymbolUsesOf(g, m)); n != 1 {
		t.Errorf("SymbolUsesOf(@g) found %d uses, want 1 (the use in @inner does not resolve)", n)
	}
}

func TestSymbolAttributes(t *testing.T) {
	m := mustParse(t, newTestContext(), symbolsSrc)
	fns := findOps(m, "test.func")
	if SymbolName(fns[0]) != "f" || !IsPrivate(fns[0]) || IsPrivate(fns[1]) || SymbolName(findOp(m, "test.use")) != "" {
		t.Error("SymbolName/IsPrivate disagree with the input")
	}
}

func TestSymTable(t *testing.T) {
	ctx := newTestContext()
	m := mustParse(t, ctx, symbolsSrc)
	outer := findOp(m, "test.module")
	st := NewSymTable(outer)
	if st.Op() != outer || st.Lookup("g") == nil || st.Lookup("h") != nil {
		t.Fatal("lookup in a fresh table")
	}
	newFunc := func(name string) *Operation {
		r := NewRegion()
		r.Append(NewBlock())
		return NewOperation(ctx, OperationState{Name: "test.func", Regions: []*Region{r},
			Properties: Dict(NamedAttr{SymNameAttr, Str(name)}, NamedAttr{"function_type", TypeAttr{FunctionOf(nil, nil)}})})
	}
	for _, tc := range []struct{ name, want string }{{"g", "g_0"}, {"g", "g_1"}, {"k", "k"}} {
		fn := newFunc(tc.name)
		fn.Region(0).Front().Append(NewOperation(ctx, OperationState{Name: "test.return"}))
		if got := st.Insert(fn); got != tc.want || SymbolName(fn) != tc.want || st.Lookup(tc.want) != fn {
			t.Errorf("Insert(@%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if err := Verify(m); err != nil {
		t.Fatalf("after inserts: %v", err)
	}
	g := st.Lookup("g")
	st.Erase(g)
	if st.Lookup("g") != nil || NewSymTable(outer).Lookup("g") != nil {
		t.Error("@g still there after Erase")
	}
	if NewSymTable(outer).Lookup("g_1") == nil {
		t.Error("@g_1 missing from a rebuilt table")
	}
}
