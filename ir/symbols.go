package ir

import (
	"slices"
	"strconv"
)

// Names of the attributes that define symbols, as in MLIR.
const (
	// SymNameAttr holds a symbol's name (a StringAttr).
	SymNameAttr = "sym_name"
	// SymVisibilityAttr holds "public" (the default), "private" or "nested".
	SymVisibilityAttr = "sym_visibility"
)

// SymbolName returns the name op defines through its sym_name attribute, or
// "" when it has none.
func SymbolName(op *Operation) string {
	if s, ok := op.Attr(SymNameAttr).(StringAttr); ok {
		return s.Value
	}
	return ""
}

// IsPrivate reports whether op's symbol visibility is "private".
func IsPrivate(op *Operation) bool {
	s, ok := op.Attr(SymVisibilityAttr).(StringAttr)
	return ok && s.Value == "private"
}

// SymTable indexes the symbols defined directly in the region of an op
// with the SymbolTable trait. It sees changes made through its own methods;
// build a new one after other changes to the region.
type SymTable struct {
	op      *Operation
	symbols map[string]*Operation
}

// NewSymTable indexes the symbols of op, which must have one region.
// When two ops share a name (invalid IR) the first one wins.
func NewSymTable(op *Operation) *SymTable {
	t := &SymTable{op: op, symbols: map[string]*Operation{}}
	if op.NumRegions() == 0 {
		return t
	}
	for b := op.Region(0).Front(); b != nil; b = b.Next() {
		for o := b.First(); o != nil; o = o.Next() {
			if name := SymbolName(o); name != "" {
				if _, dup := t.symbols[name]; !dup {
					t.symbols[name] = o
				}
			}
		}
	}
	return t
}

// Op returns the op that owns the table.
func (t *SymTable) Op() *Operation { return t.op }

// Lookup returns the symbol named name, or nil.
func (t *SymTable) Lookup(name string) *Operation { return t.symbols[name] }

// Insert appends sym to the end of the table's body (before its terminator,
// if it has one), renaming it "name_N" when its name is taken, and returns
// the name it ended up with. sym must be detached.
func (t *SymTable) Insert(sym *Operation) string {
	name := SymbolName(sym)
	if _, taken := t.symbols[name]; taken || name == "" {
		base := name
		for i := 0; ; i++ {
			name = base + "_" + strconv.Itoa(i)
			if _, taken := t.symbols[name]; !taken {
				break
			}
		}
		// Keep the name where the op had it: a discardable attribute on
		// ops that do not declare it inherent, else a property.
		if sym.Attributes().Get(SymNameAttr) != nil {
			sym.SetAttr(SymNameAttr, Str(name))
		} else {
			sym.SetProperty(SymNameAttr, Str(name))
		}
	}
	r := t.op.Region(0)
	if r.Empty() {
		r.Append(NewBlock())
	}
	body := r.Front()
	body.InsertBefore(sym, body.Terminator())
	t.symbols[name] = sym
	return name
}

// Erase removes sym from the table and erases it.
func (t *SymTable) Erase(sym *Operation) {
	if name := SymbolName(sym); t.symbols[name] == sym {
		delete(t.symbols, name)
	}
	sym.Erase()
}

// Remove forgets sym without erasing it (it stays in the IR).
func (t *SymTable) Remove(sym *Operation) {
	if name := SymbolName(sym); t.symbols[name] == sym {
		delete(t.symbols, name)
	}
}

// NearestSymbolTable returns op itself when it has the SymbolTable trait,
// else its nearest ancestor that has it, or nil.
func NearestSymbolTable(op *Operation) *Operation {
	for o := op; o != nil; o = o.ParentOp() {
		if o.HasTrait(SymbolTable) {
			return o
		}
	}
	return nil
}

// LookupSymbol resolves ref as seen from the op from, as MLIR's
// lookupNearestSymbolFrom does: the root name in the nearest symbol table
// enclosing (or being) from, then each nested name in the symbol table found
// by the previous one. It returns nil when a name is not found.
func LookupSymbol(from *Operation, ref SymbolRefAttr) *Operation {
	table := NearestSymbolTable(from)
	if table == nil {
		return nil
	}
	return lookupNested(lookupIn(table, ref.Root), ref.Nested)
}

func lookupNested(sym *Operation, nested []string) *Operation {
	for _, n := range nested {
		if sym == nil {
			return nil
		}
		sym = lookupIn(sym, n)
	}
	return sym
}

// lookupIn finds the symbol named name directly in table's first region.
func lookupIn(table *Operation, name string) *Operation {
	if table.NumRegions() == 0 {
		return nil
	}
	for b := table.Region(0).Front(); b != nil; b = b.Next() {
		for o := b.First(); o != nil; o = o.Next() {
			if SymbolName(o) == name {
				return o
			}
		}
	}
	return nil
}

// SymbolUse is one reference to a symbol: the op whose attribute (or
// property) holds it, and the reference itself.
type SymbolUse struct {
	User *Operation
	Ref  SymbolRefAttr
}

// SymbolUses returns every SymbolRefAttr held in the attributes and
// properties of op and the ops nested in it, in walk order, including refs
// nested in arrays and dictionaries.
func SymbolUses(op *Operation) []SymbolUse {
	var uses []SymbolUse
	op.Walk(func(o *Operation) bool {
		for _, d := range []DictAttr{o.Properties(), o.Attributes()} {
			for _, na := range d {
				collectSymbolRefs(na.Value, func(r SymbolRefAttr) {
					uses = append(uses, SymbolUse{User: o, Ref: r})
				})
			}
		}
		return true
	})
	return uses
}

func collectSymbolRefs(a Attribute, f func(SymbolRefAttr)) {
	switch a := a.(type) {
	case SymbolRefAttr:
		f(a)
	case ArrayAttr:
		for _, e := range a {
			collectSymbolRefs(e, f)
		}
	case DictAttr:
		for _, e := range a {
			collectSymbolRefs(e.Value, f)
		}
	}
}

// SymbolUsesOf returns the uses in the tree under root whose reference
// resolves (from the user) to sym.
func SymbolUsesOf(sym, root *Operation) []SymbolUse {
	return slices.DeleteFunc(SymbolUses(root), func(u SymbolUse) bool {
		return LookupSymbol(u.User, u.Ref) != sym
	})
}
