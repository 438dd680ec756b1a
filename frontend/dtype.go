package frontend

import (
	"fmt"

	"github.com/strata-ir/strata/ir"
)

// DType is a tensor element type.
type DType uint8

// The element types of the graph dialect.
const (
	Float32 DType = iota
	Float64
	Float16
	BFloat16
	Int64
	Int32
	Bool
)

// dtypes maps each DType to its IR element type, in DType order.
var dtypes = [...]struct {
	name string
	elem ir.Type
}{
	Float32:  {"float32", ir.F32},
	Float64:  {"float64", ir.F64},
	Float16:  {"float16", ir.F16},
	BFloat16: {"bfloat16", ir.BF16},
	Int64:    {"int64", ir.I64},
	Int32:    {"int32", ir.I32},
	Bool:     {"bool", ir.I1},
}

// String returns the name of the type, as in PyTorch ("float32").
func (d DType) String() string {
	if int(d) < len(dtypes) {
		return dtypes[d].name
	}
	return fmt.Sprintf("DType(%d)", d)
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d <= BFloat16 }

// Elem returns the IR element type of d.
func (d DType) Elem() ir.Type {
	if int(d) < len(dtypes) {
		return dtypes[d].elem
	}
	return nil
}

// dtypeOf returns the DType of an IR element type.
func dtypeOf(elem ir.Type) (DType, bool) {
	for i, d := range dtypes {
		if d.elem == elem {
			return DType(i), true
		}
	}
	return 0, false
}
