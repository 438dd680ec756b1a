package arith

// The op names of the arith dialect, one per row of its op table: code
// outside the dialect names an op by its constant, never by a string
// literal, so that a misspelt or removed op fails to compile. A test
// (dialects.TestOpNameConstants) checks that the constants and the rows agree.
const (
	// OpConstant is arith.constant: integer, float or elements constant.
	OpConstant = "arith.constant"
	// OpAddI is arith.addi: integer addition.
	OpAddI = "arith.addi"
	// OpSubI is arith.subi: integer subtraction.
	OpSubI = "arith.subi"
	// OpMulI is arith.muli: integer multiplication.
	OpMulI = "arith.muli"
	// OpDivSI is arith.divsi: signed integer division.
	OpDivSI = "arith.divsi"
	// OpDivUI is arith.divui: unsigned integer division.
	OpDivUI = "arith.divui"
	// OpRemSI is arith.remsi: signed integer remainder.
	OpRemSI = "arith.remsi"
	// OpRemUI is arith.remui: unsigned integer remainder.
	OpRemUI = "arith.remui"
	// OpCeilDivSI is arith.ceildivsi: signed ceiling integer division.
	OpCeilDivSI = "arith.ceildivsi"
	// OpCeilDivUI is arith.ceildivui: unsigned ceiling integer division.
	OpCeilDivUI = "arith.ceildivui"
	// OpFloorDivSI is arith.floordivsi: signed floor integer division.
	OpFloorDivSI = "arith.floordivsi"
	// OpMaxSI is arith.maxsi: signed integer maximum.
	OpMaxSI = "arith.maxsi"
	// OpMaxUI is arith.maxui: unsigned integer maximum.
	OpMaxUI = "arith.maxui"
	// OpMinSI is arith.minsi: signed integer minimum.
	OpMinSI = "arith.minsi"
	// OpMinUI is arith.minui: unsigned integer minimum.
	OpMinUI = "arith.minui"
	// OpAndI is arith.andi: integer bitwise and.
	OpAndI = "arith.andi"
	// OpOrI is arith.ori: integer bitwise or.
	OpOrI = "arith.ori"
	// OpXOrI is arith.xori: integer bitwise exclusive or.
	OpXOrI = "arith.xori"
	// OpShLI is arith.shli: integer left shift.
	OpShLI = "arith.shli"
	// OpShRSI is arith.shrsi: signed (arithmetic) integer right shift.
	OpShRSI = "arith.shrsi"
	// OpShRUI is arith.shrui: unsigned (logical) integer right shift.
	OpShRUI = "arith.shrui"
	// OpAddF is arith.addf: floating-point addition.
	OpAddF = "arith.addf"
	// OpSubF is arith.subf: floating-point subtraction.
	OpSubF = "arith.subf"
	// OpMulF is arith.mulf: floating-point multiplication.
	OpMulF = "arith.mulf"
	// OpDivF is arith.divf: floating-point division.
	OpDivF = "arith.divf"
	// OpRemF is arith.remf: floating-point remainder.
	OpRemF = "arith.remf"
	// OpMaximumF is arith.maximumf: floating-point maximum.
	OpMaximumF = "arith.maximumf"
	// OpMinimumF is arith.minimumf: floating-point minimum.
	OpMinimumF = "arith.minimumf"
	// OpMaxNumF is arith.maxnumf: floating-point maximum number.
	OpMaxNumF = "arith.maxnumf"
	// OpMinNumF is arith.minnumf: floating-point minimum number.
	OpMinNumF = "arith.minnumf"
	// OpNegF is arith.negf: floating-point negation.
	OpNegF = "arith.negf"
	// OpCmpI is arith.cmpi: integer comparison.
	OpCmpI = "arith.cmpi"
	// OpCmpF is arith.cmpf: floating-point comparison.
	OpCmpF = "arith.cmpf"
	// OpSelect is arith.select: select between two values on a condition.
	OpSelect = "arith.select"
	// OpExtSI is arith.extsi: integer sign extension.
	OpExtSI = "arith.extsi"
	// OpExtUI is arith.extui: integer zero extension.
	OpExtUI = "arith.extui"
	// OpTruncI is arith.trunci: integer truncation.
	OpTruncI = "arith.trunci"
	// OpExtF is arith.extf: floating-point extension.
	OpExtF = "arith.extf"
	// OpTruncF is arith.truncf: floating-point truncation.
	OpTruncF = "arith.truncf"
	// OpSIToFP is arith.sitofp: signed integer to floating-point conversion.
	OpSIToFP = "arith.sitofp"
	// OpUIToFP is arith.uitofp: unsigned integer to floating-point conversion.
	OpUIToFP = "arith.uitofp"
	// OpFPToSI is arith.fptosi: floating-point to signed integer conversion.
	OpFPToSI = "arith.fptosi"
	// OpFPToUI is arith.fptoui: floating-point to unsigned integer conversion.
	OpFPToUI = "arith.fptoui"
	// OpIndexCast is arith.index_cast: sign-extending or truncating cast between index and integers.
	OpIndexCast = "arith.index_cast"
	// OpIndexCastUI is arith.index_castui: zero-extending or truncating cast between index and integers.
	OpIndexCastUI = "arith.index_castui"
	// OpBitcast is arith.bitcast: bit-preserving cast between integers and floats of one width.
	OpBitcast = "arith.bitcast"
)
