package llvm

import (
	"fmt"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// This file is the scalar part of the translation that every LLVM target
// shares (the GPU kernels here, the host kernels of targets/cpu): types,
// integer ops and comparison predicates.

// ScalarType maps a Strata scalar type to its LLVM register type: index
// is i64, bf16 is computed in f32 but stored as i16 bits.
func ScalarType(ty ir.Type) (types.Type, error) {
	switch ty := ty.(type) {
	case *ir.IndexType:
		return types.I64, nil
	case *ir.IntegerType:
		switch ty.Width {
		case 1, 8, 16, 32, 64:
			return types.NewInt(uint64(ty.Width)), nil
		}
	case *ir.FloatType:
		switch ty {
		case ir.F16:
			return types.Half, nil
		case ir.BF16:
			return types.I16, nil
		case ir.F32:
			return types.Float, nil
		case ir.F64:
			return types.Double, nil
		}
	}
	return nil, fmt.Errorf("type %s is not supported in kernels", ty)
}

// MemType is the in-memory type of a memref element: i1 is a byte.
func MemType(elem ir.Type) (types.Type, error) {
	if it, ok := elem.(*ir.IntegerType); ok && it.Width == 1 {
		return types.I8, nil
	}
	return ScalarType(elem)
}

// TypeSuffix is the overload suffix of a float intrinsic: f32 or f64.
func TypeSuffix(t types.Type) string {
	if types.Equal(t, types.Double) {
		return "f64"
	}
	return "f32"
}

// IntBinary returns the LLVM form of the two-operand arith integer op
// name (arith.addi, arith.shrui, arith.maxsi, …).
func IntBinary(name string) (func(b *llir.Block, x, y llvmValue) llvmValue, bool) {
	f, ok := intBinary[name]
	return f, ok
}

// intBinary maps arith integer ops (on index too) to LLVM.
var intBinary = map[string]func(b *llir.Block, x, y llvmValue) llvmValue{
	arith.OpAddI:  func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewAdd(x, y) },
	arith.OpSubI:  func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewSub(x, y) },
	arith.OpMulI:  func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewMul(x, y) },
	arith.OpDivSI: func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewSDiv(x, y) },
	arith.OpDivUI: func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewUDiv(x, y) },
	arith.OpRemSI: func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewSRem(x, y) },
	arith.OpRemUI: func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewURem(x, y) },
	arith.OpAndI:  func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewAnd(x, y) },
	arith.OpOrI:   func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewOr(x, y) },
	arith.OpXOrI:  func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewXor(x, y) },
	arith.OpShLI:  func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewShl(x, y) },
	arith.OpShRSI: func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewAShr(x, y) },
	arith.OpShRUI: func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewLShr(x, y) },
	arith.OpMaxSI: minMax(enum.IPredSGT),
	arith.OpMinSI: minMax(enum.IPredSLT),
	arith.OpMaxUI: minMax(enum.IPredUGT),
	arith.OpMinUI: minMax(enum.IPredULT),
}

func minMax(p enum.IPred) func(b *llir.Block, x, y llvmValue) llvmValue {
	return func(b *llir.Block, x, y llvmValue) llvmValue { return b.NewSelect(b.NewICmp(p, x, y), x, y) }
}

// ICmpPred returns the LLVM predicate of an arith.cmpi predicate name.
func ICmpPred(name string) enum.IPred { return icmpPreds[name] }

// FCmpPred returns the LLVM predicate of an arith.cmpf predicate name.
func FCmpPred(name string) enum.FPred { return fcmpPreds[name] }

var icmpPreds = map[string]enum.IPred{
	"eq": enum.IPredEQ, "ne": enum.IPredNE, "slt": enum.IPredSLT, "sle": enum.IPredSLE, "sgt": enum.IPredSGT,
	"sge": enum.IPredSGE, "ult": enum.IPredULT, "ule": enum.IPredULE, "ugt": enum.IPredUGT, "uge": enum.IPredUGE,
}

var fcmpPreds = map[string]enum.FPred{
	"false": enum.FPredFalse, "oeq": enum.FPredOEQ, "ogt": enum.FPredOGT, "oge": enum.FPredOGE, "olt": enum.FPredOLT,
	"ole": enum.FPredOLE, "one": enum.FPredONE, "ord": enum.FPredORD, "ueq": enum.FPredUEQ, "ugt": enum.FPredUGT,
	"uge": enum.FPredUGE, "ult": enum.FPredULT, "ule": enum.FPredULE, "une": enum.FPredUNE, "uno": enum.FPredUNO,
	"true": enum.FPredTrue,
}
