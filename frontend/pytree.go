package frontend

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
)

// This file walks the arguments and results of compiled functions as
// trees (JAX's pytrees): structs, pointers to structs, slices, arrays,
// maps and interfaces whose leaves are *Tensor or Go scalars. Tensor
// leaves become graph inputs (arguments) or outputs (results); scalar
// leaves are passed to the Go function, which runs on every call, so a
// scalar that changes what the function records changes the trace.

// checkTree reports whether values of type t can be walked: tensors, Go
// scalars (bools, integers, floats, strings), and structs, pointers,
// slices, arrays, maps (with ordered keys) and interfaces of them.
// Function, channel and unsafe pointer types cannot.
func checkTree(t reflect.Type, seen map[reflect.Type]bool) error {
	if t == tensorType || seen[t] {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String,
		reflect.Interface:
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkTree(t.Elem(), seen)
	case reflect.Map:
		if !orderedKey(t.Key()) {
			return fmt.Errorf("map key type %v is not ordered (want a string, integer, float or bool key)", t.Key())
		}
		return checkTree(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue // not walked: a tensor there is read like a captured one
			}
			if err := checkTree(f.Type, seen); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%v cannot be an argument or result of a compiled function (want *Tensor, a Go scalar, or structs, pointers, slices, arrays and maps of them)", t)
}

func orderedKey(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// treeWalker collects the tensor leaves of values, each once, in a fixed
// order: struct fields in declaration order, slice and array elements in
// order, map entries by sorted key. Pointers already visited are not
// walked again (cycles, shared sub-trees).
type treeWalker struct {
	leaves  []*Tensor
	seen    map[uintptr]bool
	tensors map[*Tensor]bool // the leaves, once there are many
}

func (w *treeWalker) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.Type() == tensorType {
			t := v.Interface().(*Tensor)
			if len(w.leaves) < 16 {
				if !slices.Contains(w.leaves, t) {
					w.leaves = append(w.leaves, t)
				}
				return
			}
			if w.seen == nil {
				w.seen = map[uintptr]bool{}
			}
			if w.tensors == nil {
				w.tensors = map[*Tensor]bool{}
				for _, l := range w.leaves {
					w.tensors[l] = true
				}
			}
			if !w.tensors[t] {
				w.tensors[t] = true
				w.leaves = append(w.leaves, t)
			}
			return
		}
		if w.seen == nil {
			w.seen = map[uintptr]bool{}
		}
		if w.seen[v.Pointer()] {
			return
		}
		w.seen[v.Pointer()] = true
		w.walk(v.Elem())
	case reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return
		}
		if v.Type().Elem() == tensorType {
			for i := range v.Len() {
				w.walk(v.Index(i))
			}
			return
		}
		if !hasTensors(v.Type().Elem()) {
			return
		}
		for i := range v.Len() {
			w.walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !hasTensors(v.Type().Elem()) {
			return
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, compareKeys)
		for _, k := range keys {
			w.walk(v.MapIndex(k))
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				w.walk(v.Field(i))
			}
		}
	}
}

// hasTensors reports whether values of type t may hold tensors (a quick
// skip for slices and maps of scalars).
func hasTensors(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return false
	}
	return true
}

func compareKeys(a, b reflect.Value) int {
	switch a.Kind() {
	case reflect.String:
		return cmp.Compare(a.String(), b.String())
	case reflect.Bool:
		return cmp.Compare(boolInt(a.Bool()), boolInt(b.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return cmp.Compare(a.Int(), b.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return cmp.Compare(a.Uint(), b.Uint())
	case reflect.Float32, reflect.Float64:
		return cmp.Compare(a.Float(), b.Float())
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// treeLeaves returns the tensor leaves of vs, each once, in walk order.
func treeLeaves(vs []reflect.Value) []*Tensor {
	var w treeWalker
	for _, v := range vs {
		w.walk(v)
	}
	return w.leaves
}
