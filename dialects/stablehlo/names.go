package stablehlo

// The op names of the stablehlo dialect, one per row of its op table: code
// outside the dialect names an op by its constant (dialects.TestOpNameConstants
// checks that the constants and the rows agree).
const (
	// OpNegate is stablehlo.negate: elementwise negation.
	OpNegate = "stablehlo.negate"
	// OpAbs is stablehlo.abs: elementwise absolute value.
	OpAbs = "stablehlo.abs"
	// OpExponential is stablehlo.exponential: elementwise e^x.
	OpExponential = "stablehlo.exponential"
	// OpExponentialMinusOne is stablehlo.exponential_minus_one: elementwise e^x - 1.
	OpExponentialMinusOne = "stablehlo.exponential_minus_one"
	// OpLog is stablehlo.log: elementwise natural logarithm.
	OpLog = "stablehlo.log"
	// OpLogPlusOne is stablehlo.log_plus_one: elementwise log(1 + x).
	OpLogPlusOne = "stablehlo.log_plus_one"
	// OpSqrt is stablehlo.sqrt: elementwise square root.
	OpSqrt = "stablehlo.sqrt"
	// OpRsqrt is stablehlo.rsqrt: elementwise 1/√x.
	OpRsqrt = "stablehlo.rsqrt"
	// OpTanh is stablehlo.tanh: elementwise hyperbolic tangent.
	OpTanh = "stablehlo.tanh"
	// OpLogistic is stablehlo.logistic: elementwise 1/(1 + e^-x).
	OpLogistic = "stablehlo.logistic"
	// OpSine is stablehlo.sine: elementwise sine.
	OpSine = "stablehlo.sine"
	// OpCosine is stablehlo.cosine: elementwise cosine.
	OpCosine = "stablehlo.cosine"
	// OpNot is stablehlo.not: elementwise logical not (i1).
	OpNot = "stablehlo.not"
	// OpConvert is stablehlo.convert: elementwise element type conversion.
	OpConvert = "stablehlo.convert"
	// OpAdd is stablehlo.add: elementwise addition of operands of one shape.
	OpAdd = "stablehlo.add"
	// OpSubtract is stablehlo.subtract: elementwise subtraction of operands of one shape.
	OpSubtract = "stablehlo.subtract"
	// OpMultiply is stablehlo.multiply: elementwise multiplication of operands of one shape.
	OpMultiply = "stablehlo.multiply"
	// OpDivide is stablehlo.divide: elementwise division of operands of one shape.
	OpDivide = "stablehlo.divide"
	// OpMaximum is stablehlo.maximum: elementwise maximum of operands of one shape.
	OpMaximum = "stablehlo.maximum"
	// OpMinimum is stablehlo.minimum: elementwise minimum of operands of one shape.
	OpMinimum = "stablehlo.minimum"
	// OpPower is stablehlo.power: elementwise power of operands of one shape.
	OpPower = "stablehlo.power"
	// OpAnd is stablehlo.and: elementwise logical and (i1) of operands of one shape.
	OpAnd = "stablehlo.and"
	// OpOr is stablehlo.or: elementwise logical or (i1) of operands of one shape.
	OpOr = "stablehlo.or"
	// OpXor is stablehlo.xor: elementwise logical xor (i1) of operands of one shape.
	OpXor = "stablehlo.xor"
	// OpConstant is stablehlo.constant: a constant tensor.
	OpConstant = "stablehlo.constant"
	// OpIota is stablehlo.iota: a tensor counting along iota_dimension.
	OpIota = "stablehlo.iota"
	// OpCompare is stablehlo.compare: elementwise comparison (comparison_direction EQ, NE, LT, LE, GT, GE).
	OpCompare = "stablehlo.compare"
	// OpSelect is stablehlo.select: elementwise choice by an i1 predicate.
	OpSelect = "stablehlo.select"
	// OpClamp is stablehlo.clamp: clamp(min, x, max).
	OpClamp = "stablehlo.clamp"
	// OpBroadcastInDim is stablehlo.broadcast_in_dim: broadcast, operand dim i going to result dim broadcast_dimensions[i].
	OpBroadcastInDim = "stablehlo.broadcast_in_dim"
	// OpReshape is stablehlo.reshape: reshape to the result type.
	OpReshape = "stablehlo.reshape"
	// OpTranspose is stablehlo.transpose: permute dims.
	OpTranspose = "stablehlo.transpose"
	// OpSlice is stablehlo.slice: static strided slice.
	OpSlice = "stablehlo.slice"
	// OpConcatenate is stablehlo.concatenate: join along dimension.
	OpConcatenate = "stablehlo.concatenate"
	// OpDotGeneral is stablehlo.dot_general: contraction with batching and contracting dims.
	OpDotGeneral = "stablehlo.dot_general"
	// OpConvolution is stablehlo.convolution: N-d convolution with dimension numbers.
	OpConvolution = "stablehlo.convolution"
	// OpReduce is stablehlo.reduce: reduce over dimensions with a body region.
	OpReduce = "stablehlo.reduce"
	// OpReduceWindow is stablehlo.reduce_window: windowed reduction with a body region (pooling).
	OpReduceWindow = "stablehlo.reduce_window"
	// OpGather is stablehlo.gather: gather slices at indices.
	OpGather = "stablehlo.gather"
	// OpPad is stablehlo.pad: pad with a scalar (edge and interior padding).
	OpPad = "stablehlo.pad"
	// OpCustomCall is stablehlo.custom_call: a call to an external target (not supported: refused by the conversion).
	OpCustomCall = "stablehlo.custom_call"
	// OpReturn is stablehlo.return: terminates a reduction body.
	OpReturn = "stablehlo.return"
)
