package ir

import (
	"slices"
	"testing"
)

func TestDict(t *testing.T) {
	a, b, c := Str("a"), Str("b"), Str("c")
	tests := []struct {
		name    string
		entries []NamedAttr
		want    DictAttr
	}{
		{"empty", nil, nil},
		{"sorted", []NamedAttr{{"x", a}, {"y", b}}, DictAttr{{"x", a}, {"y", b}}},
		{"unsorted", []NamedAttr{{"y", b}, {"x", a}}, DictAttr{{"x", a}, {"y", b}}},
		{"later duplicate wins", []NamedAttr{{"x", a}, {"x", c}}, DictAttr{{"x", c}}},
		{"nil removes", []NamedAttr{{"x", a}, {"y", b}, {"x", nil}}, DictAttr{{"y", b}}},
		{"only nil", []NamedAttr{{"x", nil}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.entries)
			got := Dict(in...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Dict(%v) = %v, want %v", tt.entries, got, tt.want)
			}
			if len(in) > 0 && len(got) > 0 {
				in[0].Value = Str("changed")
				if got[0].Value == Str("changed") {
					t.Errorf("Dict(%v) shares its entries with the caller", tt.entries)
				}
			}
		})
	}
}

func TestNewOperationSlots(t *testing.T) {
	ctx := NewContext()
	blk := NewBlock(I32, I32, I32, I32)
	args := blk.Arguments()
	for n := range len(args) + 1 {
		for nr := range 3 {
			types := slices.Repeat([]Type{I64}, nr)
			op := NewOperation(ctx, OperationState{Name: "test.op", Operands: args[:n], ResultTypes: types})
			if op.NumOperands() != n || op.NumResults() != nr {
				t.Fatalf("%d operands, %d results: got %d and %d", n, nr, op.NumOperands(), op.NumResults())
			}
			for i, o := range op.OpOperands() {
				if o.Get() != args[i] || o.Owner() != op || o.Index() != i {
					t.Errorf("%d operands, %d results: operand %d is %v of %v at %d", n, nr, i, o.Get(), o.Owner(), o.Index())
				}
			}
			for i, r := range op.Results() {
				if r.Type() != I64 || r.DefiningOp() != op || r.Index() != i {
					t.Errorf("%d operands, %d results: result %d is wrong", n, nr, i)
				}
			}
			c := op.Clone(nil)
			if !slices.Equal(c.Operands(), op.Operands()) || len(c.Results()) != nr {
				t.Errorf("%d operands, %d results: the clone differs", n, nr)
			}
			c.Erase()
			op.Erase()
		}
	}
	for _, a := range args {
		if a.HasUses() {
			t.Errorf("argument %d still has uses after the ops are erased", a.Index())
		}
	}
}

func TestAttrEqual(t *testing.T) {
	tests := []struct {
		a, b Attribute
		want bool
	}{
		{IntegerAttr{Value: 1, Type: I32}, IntegerAttr{Value: 1, Type: I32}, true},
		{IntegerAttr{Value: 1, Type: I32}, IntegerAttr{Value: 1, Type: I64}, false},
		{IntegerAttr{Value: 1, Type: I32}, IntegerAttr{Value: 2, Type: I32}, false},
		{Float(1.5, F32), Float(1.5, F32), true},
		{Float(1.5, F32), Float(1.5, F64), false},
		{Str("a"), Str("a"), true},
		{Str("a"), OpaqueAttr{Text: `"a"`}, true}, // same text
		{OpaqueAttr{Text: "#x<1>"}, OpaqueAttr{Text: "#x<1>"}, true},
		{TypeAttr{Type: I32}, TypeAttr{Type: I32}, true},
		{UnitAttr{}, UnitAttr{}, true},
		{ArrayAttr{IntegerAttr{Value: 1, Type: I64}}, ArrayAttr{IntegerAttr{Value: 1, Type: I64}}, true},
		{ArrayAttr{IntegerAttr{Value: 1, Type: I64}}, ArrayAttr{}, false},
		{ArrayAttr{IntegerAttr{Value: 1, Type: I64}, IntegerAttr{Value: 2, Type: I64}}, ArrayAttr{IntegerAttr{Value: 1, Type: I64}, IntegerAttr{Value: 3, Type: I64}}, false},
		{ArrayAttr{IntegerAttr{Value: 1, Type: I64}}, ArrayAttr{IntegerAttr{Value: 1, Type: I32}}, false},
		{ArrayAttr{IntegerAttr{Value: 1, Type: I64}}, ArrayAttr{OpaqueAttr{Text: "1"}}, true}, // same text
		{ArrayAttr{Str("a")}, ArrayAttr{OpaqueAttr{Text: `"a"`}}, true},
		{nil, nil, true},
		{nil, UnitAttr{}, false},
	}
	for _, tt := range tests {
		if got := AttrEqual(tt.a, tt.b); got != tt.want {
			t.Errorf("AttrEqual(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDictEqual(t *testing.T) {
	d := Dict(NamedAttr{"a", IntegerAttr{Value: 1, Type: I64}}, NamedAttr{"b", Str("x")})
	tests := []struct {
		e    DictAttr
		want bool
	}{
		{Dict(NamedAttr{"b", Str("x")}, NamedAttr{"a", IntegerAttr{Value: 1, Type: I64}}), true},
		{Dict(NamedAttr{"a", IntegerAttr{Value: 1, Type: I64}}), false},
		{Dict(NamedAttr{"a", IntegerAttr{Value: 1, Type: I64}}, NamedAttr{"c", Str("x")}), false},
		{Dict(NamedAttr{"a", IntegerAttr{Value: 2, Type: I64}}, NamedAttr{"b", Str("x")}), false},
	}
	for _, tt := range tests {
		if got := d.Equal(tt.e); got != tt.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", d, tt.e, got, tt.want)
		}
	}
	if !DictAttr(nil).Equal(DictAttr{}) {
		t.Error("nil and empty dictionaries differ")
	}
}
