package math

// The op names of the math dialect, one per row of its op table: code
// outside the dialect names an op by its constant, never by a string
// literal, so that a misspelt or removed op fails to compile. A test
// (dialects.TestOpNameConstants) checks that the constants and the rows agree.
const (
	// OpAbsF is math.absf: floating point absolute-value operation.
	OpAbsF = "math.absf"
	// OpAcos is math.acos: arcus cosine of the specified value.
	OpAcos = "math.acos"
	// OpAcosh is math.acosh: Hyperbolic arcus cosine of the given value.
	OpAcosh = "math.acosh"
	// OpAsin is math.asin: arcus sine of the given value.
	OpAsin = "math.asin"
	// OpAsinh is math.asinh: hyperbolic arcus sine of the given value.
	OpAsinh = "math.asinh"
	// OpAtan is math.atan: arcus tangent of the given value.
	OpAtan = "math.atan"
	// OpAtan2 is math.atan2: 2-argument arcus tangent of the given values.
	OpAtan2 = "math.atan2"
	// OpAtanh is math.atanh: hyperbolic arcus tangent of the given value.
	OpAtanh = "math.atanh"
	// OpCbrt is math.cbrt: cube root of the specified value.
	OpCbrt = "math.cbrt"
	// OpCeil is math.ceil: ceiling of the specified value.
	OpCeil = "math.ceil"
	// OpCopySign is math.copysign: A copysign operation.
	OpCopySign = "math.copysign"
	// OpCos is math.cos: cosine of the specified value.
	OpCos = "math.cos"
	// OpCosh is math.cosh: hyperbolic cosine of the specified value.
	OpCosh = "math.cosh"
	// OpErf is math.erf: error function of the specified value.
	OpErf = "math.erf"
	// OpExp is math.exp: base-e exponential of the specified value.
	OpExp = "math.exp"
	// OpExp2 is math.exp2: base-2 exponential of the specified value.
	OpExp2 = "math.exp2"
	// OpExpm1 is math.expm1: base-e exponential of the specified value minus 1.
	OpExpm1 = "math.expm1"
	// OpFloor is math.floor: floor of the specified value.
	OpFloor = "math.floor"
	// OpFMA is math.fma: floating point fused multiply-add operation.
	OpFMA = "math.fma"
	// OpLog is math.log: base-e logarithm of the specified value.
	OpLog = "math.log"
	// OpLog10 is math.log10: base-10 logarithm of the specified value.
	OpLog10 = "math.log10"
	// OpLog1p is math.log1p: Computes the natural logarithm of one plus the given value.
	OpLog1p = "math.log1p"
	// OpLog2 is math.log2: base-2 logarithm of the specified value.
	OpLog2 = "math.log2"
	// OpPowF is math.powf: floating point raised to the power of operation.
	OpPowF = "math.powf"
	// OpRound is math.round: round of the specified value.
	OpRound = "math.round"
	// OpRoundEven is math.roundeven: round of the specified value with halfway cases to even.
	OpRoundEven = "math.roundeven"
	// OpRsqrt is math.rsqrt: reciprocal of sqrt (1 / sqrt of the specified value).
	OpRsqrt = "math.rsqrt"
	// OpSin is math.sin: sine of the specified value.
	OpSin = "math.sin"
	// OpSinh is math.sinh: hyperbolic sine of the specified value.
	OpSinh = "math.sinh"
	// OpSqrt is math.sqrt: sqrt of the specified value.
	OpSqrt = "math.sqrt"
	// OpTan is math.tan: tangent of the specified value.
	OpTan = "math.tan"
	// OpTanh is math.tanh: hyperbolic tangent of the specified value.
	OpTanh = "math.tanh"
	// OpTrunc is math.trunc: trunc of the specified value.
	OpTrunc = "math.trunc"
	// OpFPowI is math.fpowi: floating point raised to the signed integer power.
	OpFPowI = "math.fpowi"
	// OpAbsI is math.absi: integer absolute-value operation.
	OpAbsI = "math.absi"
	// OpCtlz is math.ctlz: counts the leading zeros an integer value.
	OpCtlz = "math.ctlz"
	// OpCtpop is math.ctpop: counts the number of set bits of an integer value.
	OpCtpop = "math.ctpop"
	// OpCttz is math.cttz: counts the trailing zeros an integer value.
	OpCttz = "math.cttz"
	// OpIPowI is math.ipowi: signed integer raised to the power of operation.
	OpIPowI = "math.ipowi"
)
