package graph

// The op names of the graph dialect, one per row of its op table: code
// outside the dialect names an op by its constant, never by a string
// literal, so that a misspelt or removed op fails to compile. A test
// (dialects.TestOpNameConstants) checks that the constants and the rows agree.
const (
	// OpConstant is graph.constant: a constant tensor.
	OpConstant = "graph.constant"
	// OpIota is graph.iota: a tensor counting along one axis.
	OpIota = "graph.iota"
	// OpFull is graph.full: a tensor filled with one value.
	OpFull = "graph.full"
	// OpNeg is graph.neg: elementwise negation.
	OpNeg = "graph.neg"
	// OpAbs is graph.abs: elementwise absolute value.
	OpAbs = "graph.abs"
	// OpExp is graph.exp: elementwise exponential.
	OpExp = "graph.exp"
	// OpLog is graph.log: elementwise natural logarithm.
	OpLog = "graph.log"
	// OpSqrt is graph.sqrt: elementwise square root.
	OpSqrt = "graph.sqrt"
	// OpRsqrt is graph.rsqrt: elementwise reciprocal square root.
	OpRsqrt = "graph.rsqrt"
	// OpTanh is graph.tanh: elementwise hyperbolic tangent.
	OpTanh = "graph.tanh"
	// OpSigmoid is graph.sigmoid: elementwise logistic sigmoid.
	OpSigmoid = "graph.sigmoid"
	// OpRelu is graph.relu: elementwise rectified linear unit.
	OpRelu = "graph.relu"
	// OpGELU is graph.gelu: elementwise Gaussian error linear unit.
	OpGELU = "graph.gelu"
	// OpErf is graph.erf: elementwise error function.
	OpErf = "graph.erf"
	// OpSin is graph.sin: elementwise sine.
	OpSin = "graph.sin"
	// OpCos is graph.cos: elementwise cosine.
	OpCos = "graph.cos"
	// OpReciprocal is graph.reciprocal: elementwise reciprocal.
	OpReciprocal = "graph.reciprocal"
	// OpAdd is graph.add: elementwise addition.
	OpAdd = "graph.add"
	// OpSub is graph.sub: elementwise subtraction.
	OpSub = "graph.sub"
	// OpMul is graph.mul: elementwise multiplication.
	OpMul = "graph.mul"
	// OpDiv is graph.div: elementwise division.
	OpDiv = "graph.div"
	// OpPow is graph.pow: elementwise power.
	OpPow = "graph.pow"
	// OpMax is graph.max: elementwise maximum.
	OpMax = "graph.max"
	// OpMin is graph.min: elementwise minimum.
	OpMin = "graph.min"
	// OpCmp is graph.cmp: elementwise comparison.
	OpCmp = "graph.cmp"
	// OpSelect is graph.select: elementwise choice.
	OpSelect = "graph.select"
	// OpCast is graph.cast: elementwise conversion of the element type.
	OpCast = "graph.cast"
	// OpReduceSum is graph.reduce_sum: sum over axes.
	OpReduceSum = "graph.reduce_sum"
	// OpReduceMax is graph.reduce_max: max over axes.
	OpReduceMax = "graph.reduce_max"
	// OpReduceMin is graph.reduce_min: min over axes.
	OpReduceMin = "graph.reduce_min"
	// OpReduceMean is graph.reduce_mean: mean over axes.
	OpReduceMean = "graph.reduce_mean"
	// OpArgmax is graph.argmax: index of the maximum along an axis.
	OpArgmax = "graph.argmax"
	// OpReshape is graph.reshape: the same elements in another shape.
	OpReshape = "graph.reshape"
	// OpTranspose is graph.transpose: permutes the dims.
	OpTranspose = "graph.transpose"
	// OpBroadcastTo is graph.broadcast_to: broadcasts to a shape.
	OpBroadcastTo = "graph.broadcast_to"
	// OpConcat is graph.concat: joins tensors along an axis.
	OpConcat = "graph.concat"
	// OpSlice is graph.slice: a strided window.
	OpSlice = "graph.slice"
	// OpPad is graph.pad: pads with a constant.
	OpPad = "graph.pad"
	// OpGather is graph.gather: picks slices by index along an axis.
	OpGather = "graph.gather"
	// OpScatterAdd is graph.scatter_add: sums slices into positions by index along an axis (the adjoint of gather).
	OpScatterAdd = "graph.scatter_add"
	// OpMatmul is graph.matmul: matrix product (numpy.matmul).
	OpMatmul = "graph.matmul"
	// OpConv2D is graph.conv2d: 2-D convolution, NCHW.
	OpConv2D = "graph.conv2d"
	// OpSoftmax is graph.softmax: softmax along an axis (composite).
	OpSoftmax = "graph.softmax"
	// OpLogSoftmax is graph.log_softmax: log of softmax along an axis (composite).
	OpLogSoftmax = "graph.log_softmax"
	// OpLogSumExp is graph.logsumexp: log of the sum of exponentials along
	// an axis (composite).
	OpLogSumExp = "graph.logsumexp"
	// OpLayerNorm is graph.layer_norm: layer normalization (composite).
	OpLayerNorm = "graph.layer_norm"
	// OpRMSNorm is graph.rms_norm: root-mean-square normalization (composite).
	OpRMSNorm = "graph.rms_norm"
	// OpAttention is graph.attention: scaled dot-product attention (composite).
	OpAttention = "graph.attention"
	// OpAttentionGrad is graph.attention_grad: attention's gradients with
	// respect to q, k and v (composite).
	OpAttentionGrad = "graph.attention_grad"
	// OpFusion is graph.fusion: a group of ops that becomes one kernel.
	OpFusion = "graph.fusion"
	// OpYield is graph.yield: ends a graph.fusion body.
	OpYield = "graph.yield"
	// OpAllReduce is graph.all_reduce: combines a tensor across the ranks of a group.
	OpAllReduce = "graph.all_reduce"
	// OpAllGather is graph.all_gather: concatenates the ranks' tensors along an axis.
	OpAllGather = "graph.all_gather"
	// OpReduceScatter is graph.reduce_scatter: combines tensors across ranks and gives each rank one slice.
	OpReduceScatter = "graph.reduce_scatter"
	// OpBroadcast is graph.broadcast: every rank receives the root rank's tensor.
	OpBroadcast = "graph.broadcast"
	// OpReduceTo is graph.reduce_to: sums the ranks' tensors on the root rank.
	OpReduceTo = "graph.reduce_to"
)
