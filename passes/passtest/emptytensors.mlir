// Programs on empty tensors (a dimension of size 0), for
// EmptyTensorPrograms: each function is one case, checked against the
// graph-level interpreter. A reduction over an empty axis gives its
// identity (0, -inf, +inf; a mean 0/0 = NaN), a matmul with K = 0 gives
// zeros (and then its bias), and an op whose result is empty gives an empty
// buffer. Functions start at the beginning of a line with "func.func @".

// Reductions over an empty axis, keeping it or not.
func.func @sum_zero_axis(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  %r = "graph.reduce_sum"(%x) <{axes = [1], keepdims = false}> : (tensor<3x0xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

func.func @sum_zero_axis_keepdims(%x: tensor<3x0xi32>) -> tensor<3x1xi32> {
  %r = "graph.reduce_sum"(%x) <{axes = [1], keepdims = true}> : (tensor<3x0xi32>) -> tensor<3x1xi32>
  return %r : tensor<3x1xi32>
}

func.func @sum_leading_zero_axis(%x: tensor<0x5xf32>) -> tensor<5xf32> {
  %r = "graph.reduce_sum"(%x) <{axes = [0], keepdims = false}> : (tensor<0x5xf32>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}

func.func @sum_all_of_0x0x1(%x: tensor<0x0x1xi32>) -> tensor<i32> {
  %r = "graph.reduce_sum"(%x) <{axes = [0, 1, 2], keepdims = false}> : (tensor<0x0x1xi32>) -> tensor<i32>
  return %r : tensor<i32>
}

func.func @sum_middle_zero_axis(%x: tensor<2x0x3xf64>) -> tensor<2x3xf64> {
  %r = "graph.reduce_sum"(%x) <{axes = [1], keepdims = false}> : (tensor<2x0x3xf64>) -> tensor<2x3xf64>
  return %r : tensor<2x3xf64>
}

func.func @max_zero_axis(%x: tensor<4x0xf32>) -> tensor<4xf32> {
  %r = "graph.reduce_max"(%x) <{axes = [1], keepdims = false}> : (tensor<4x0xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @max_zero_axis_int(%x: tensor<4x0xi64>) -> tensor<4xi64> {
  %r = "graph.reduce_max"(%x) <{axes = [1], keepdims = false}> : (tensor<4x0xi64>) -> tensor<4xi64>
  return %r : tensor<4xi64>
}

func.func @min_zero_axis(%x: tensor<0x4xf16>) -> tensor<4xf16> {
  %r = "graph.reduce_min"(%x) <{axes = [0], keepdims = false}> : (tensor<0x4xf16>) -> tensor<4xf16>
  return %r : tensor<4xf16>
}

func.func @mean_zero_axis(%x: tensor<2x0xf32>) -> tensor<2xf32> {
  %r = "graph.reduce_mean"(%x) <{axes = [1], keepdims = false}> : (tensor<2x0xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// A reduction keeping an empty axis has an empty result.
func.func @sum_keep_zero_axis(%x: tensor<0x3xf32>) -> tensor<0xf32> {
  %r = "graph.reduce_sum"(%x) <{axes = [1], keepdims = false}> : (tensor<0x3xf32>) -> tensor<0xf32>
  return %r : tensor<0xf32>
}

func.func @sum_keep_zero_axis_keepdims(%x: tensor<2x0x3xi32>) -> tensor<2x0x1xi32> {
  %r = "graph.reduce_sum"(%x) <{axes = [2], keepdims = true}> : (tensor<2x0x3xi32>) -> tensor<2x0x1xi32>
  return %r : tensor<2x0x1xi32>
}

// The reduced tensor reaches the reduction through views that take its
// empty index apart.
func.func @sum_of_reshape(%x: tensor<0x4xf32>) -> tensor<4xf32> {
  %v = "graph.reshape"(%x) <{shape = [4, 0]}> : (tensor<0x4xf32>) -> tensor<4x0xf32>
  %r = "graph.reduce_sum"(%v) <{axes = [1], keepdims = false}> : (tensor<4x0xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @sum_of_transpose(%x: tensor<0x3xf32>) -> tensor<3xf32> {
  %t = "graph.transpose"(%x) <{perm = [1, 0]}> : (tensor<0x3xf32>) -> tensor<3x0xf32>
  %r = "graph.reduce_sum"(%t) <{axes = [1], keepdims = false}> : (tensor<3x0xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

func.func @sum_of_empty_matmul(%a: tensor<1x0x1xi32>) -> tensor<i32> {
  %t = "graph.transpose"(%a) <{perm = [0, 2, 1]}> : (tensor<1x0x1xi32>) -> tensor<1x1x0xi32>
  %m = "graph.matmul"(%a, %t) : (tensor<1x0x1xi32>, tensor<1x1x0xi32>) -> tensor<1x0x0xi32>
  %r = "graph.reduce_sum"(%m) <{keepdims = false}> : (tensor<1x0x0xi32>) -> tensor<i32>
  return %r : tensor<i32>
}

// Softmax-style rows: zero rows, zero columns, and a row reduction of them.
func.func @softmax_zero_rows(%x: tensor<0x4xf32>) -> tensor<0x4xf32> {
  %r = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<0x4xf32>) -> tensor<0x4xf32>
  return %r : tensor<0x4xf32>
}

func.func @softmax_zero_columns(%x: tensor<4x0xf32>) -> tensor<4x0xf32> {
  %r = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<4x0xf32>) -> tensor<4x0xf32>
  return %r : tensor<4x0xf32>
}

func.func @softmax_zero_columns_summed(%x: tensor<4x0xf32>) -> tensor<4xf32> {
  %s = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<4x0xf32>) -> tensor<4x0xf32>
  %r = "graph.reduce_sum"(%s) <{axes = [1], keepdims = false}> : (tensor<4x0xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @softmax_zero_rows_summed(%x: tensor<0x4xf32>) -> tensor<4xf32> {
  %s = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<0x4xf32>) -> tensor<0x4xf32>
  %r = "graph.reduce_sum"(%s) <{axes = [0], keepdims = false}> : (tensor<0x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// A softmax over an empty axis read through a broadcast into an empty
// result (the element the sum reads is index 0 of an empty dim).
func.func @softmax_broadcast(%x: tensor<0xf64>, %y: tensor<0x0xf64>) -> tensor<0x0xf64> {
  %s = "graph.softmax"(%x) <{axis = 0 : i64}> : (tensor<0xf64>) -> tensor<0xf64>
  %r = "graph.add"(%y, %s) : (tensor<0x0xf64>, tensor<0xf64>) -> tensor<0x0xf64>
  return %r : tensor<0x0xf64>
}

func.func @log_softmax_zero_columns(%x: tensor<3x0xf32>) -> tensor<3x0xf32> {
  %r = "graph.log_softmax"(%x) <{axis = -1 : i64}> : (tensor<3x0xf32>) -> tensor<3x0xf32>
  return %r : tensor<3x0xf32>
}

func.func @logsumexp_zero_axis(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  %r = "graph.logsumexp"(%x) <{axis = -1 : i64, keepdims = false}> : (tensor<3x0xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

func.func @logsumexp_zero_axis_keepdims(%x: tensor<0x3xf32>) -> tensor<1x3xf32> {
  %r = "graph.logsumexp"(%x) <{axis = 0 : i64, keepdims = true}> : (tensor<0x3xf32>) -> tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}

func.func @layer_norm_zero_columns(%x: tensor<3x0xf32>, %w: tensor<0xf32>, %b: tensor<0xf32>) -> tensor<3xf32> {
  %n = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<3x0xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<3x0xf32>
  %r = "graph.reduce_sum"(%n) <{axes = [1], keepdims = false}> : (tensor<3x0xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

func.func @layer_norm_zero_rows(%x: tensor<0x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<0x8xf32> {
  %r = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<0x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<0x8xf32>
  return %r : tensor<0x8xf32>
}

func.func @rms_norm_zero_columns(%x: tensor<2x0xf32>, %w: tensor<0xf32>) -> tensor<2x0xf32> {
  %r = "graph.rms_norm"(%x, %w) <{axis = -1 : i64, epsilon = 1.0e-06 : f32}> : (tensor<2x0xf32>, tensor<0xf32>) -> tensor<2x0xf32>
  return %r : tensor<2x0xf32>
}

// Matmuls: K = 0 gives zeros (then the bias); M or N = 0 an empty result.
func.func @matmul_k0(%a: tensor<3x0xf32>, %b: tensor<0x4xf32>) -> tensor<3x4xf32> {
  %r = "graph.matmul"(%a, %b) : (tensor<3x0xf32>, tensor<0x4xf32>) -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

func.func @matmul_k0_bias(%a: tensor<3x0xf32>, %b: tensor<0x4xf32>, %c: tensor<4xf32>) -> tensor<3x4xf32> {
  %m = "graph.matmul"(%a, %b) : (tensor<3x0xf32>, tensor<0x4xf32>) -> tensor<3x4xf32>
  %r = "graph.add"(%m, %c) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

func.func @matmul_k0_int(%a: tensor<2x0xi32>, %b: tensor<0x3xi32>) -> tensor<2x3xi32> {
  %r = "graph.matmul"(%a, %b) : (tensor<2x0xi32>, tensor<0x3xi32>) -> tensor<2x3xi32>
  return %r : tensor<2x3xi32>
}

func.func @matmul_k0_batched(%a: tensor<2x3x0xf32>, %b: tensor<2x0x4xf32>) -> tensor<2x3x4xf32> {
  %r = "graph.matmul"(%a, %b) : (tensor<2x3x0xf32>, tensor<2x0x4xf32>) -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

func.func @matmul_k0_f16_bias_relu(%a: tensor<32x0xf16>, %b: tensor<0x32xf16>, %c: tensor<32xf16>) -> tensor<32x32xf16> {
  %m = "graph.matmul"(%a, %b) : (tensor<32x0xf16>, tensor<0x32xf16>) -> tensor<32x32xf16>
  %s = "graph.add"(%m, %c) : (tensor<32x32xf16>, tensor<32xf16>) -> tensor<32x32xf16>
  %r = "graph.relu"(%s) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  return %r : tensor<32x32xf16>
}

func.func @matmul_m0(%a: tensor<0x5xf32>, %b: tensor<5x4xf32>) -> tensor<0x4xf32> {
  %r = "graph.matmul"(%a, %b) : (tensor<0x5xf32>, tensor<5x4xf32>) -> tensor<0x4xf32>
  return %r : tensor<0x4xf32>
}

func.func @matmul_n0(%a: tensor<3x5xf32>, %b: tensor<5x0xf32>) -> tensor<3x0xf32> {
  %r = "graph.matmul"(%a, %b) : (tensor<3x5xf32>, tensor<5x0xf32>) -> tensor<3x0xf32>
  return %r : tensor<3x0xf32>
}

func.func @matmul_m0_summed(%a: tensor<0x5xf32>, %b: tensor<5x4xf32>) -> tensor<4xf32> {
  %m = "graph.matmul"(%a, %b) : (tensor<0x5xf32>, tensor<5x4xf32>) -> tensor<0x4xf32>
  %r = "graph.reduce_sum"(%m) <{axes = [0], keepdims = false}> : (tensor<0x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// Views with an empty operand and a non-empty result.
func.func @concat_empty_operand(%x: tensor<0x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = "graph.concat"(%x, %y, %x) <{axis = 0 : i64}> : (tensor<0x3xf32>, tensor<2x3xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

func.func @concat_empty_columns(%x: tensor<2x0xi32>, %y: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = "graph.concat"(%y, %x) <{axis = 1 : i64}> : (tensor<2x3xi32>, tensor<2x0xi32>) -> tensor<2x3xi32>
  return %r : tensor<2x3xi32>
}

func.func @pad_empty(%x: tensor<0x2xi32>) -> tensor<2x3xi32> {
  %r = "graph.pad"(%x) <{low = [1, 0], high = [1, 1], value = 7 : i32}> : (tensor<0x2xi32>) -> tensor<2x3xi32>
  return %r : tensor<2x3xi32>
}

func.func @slice_to_empty_summed(%x: tensor<4x3xf32>) -> tensor<3xf32> {
  %s = "graph.slice"(%x) <{starts = [1, 0], limits = [1, 3], strides = [1, 1]}> : (tensor<4x3xf32>) -> tensor<0x3xf32>
  %r = "graph.reduce_sum"(%s) <{axes = [0], keepdims = false}> : (tensor<0x3xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

func.func @gather_no_indices_summed(%x: tensor<4x3xf32>, %i: tensor<0xi32>) -> tensor<3xf32> {
  %g = "graph.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<4x3xf32>, tensor<0xi32>) -> tensor<0x3xf32>
  %r = "graph.reduce_sum"(%g) <{axes = [0], keepdims = false}> : (tensor<0x3xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

func.func @broadcast_empty(%x: tensor<1x0xf32>, %y: tensor<3x1xf32>) -> tensor<3xf32> {
  %a = "graph.add"(%x, %y) : (tensor<1x0xf32>, tensor<3x1xf32>) -> tensor<3x0xf32>
  %r = "graph.reduce_max"(%a) <{axes = [1], keepdims = false}> : (tensor<3x0xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// Attention over no keys, and with no queries.
func.func @attention_no_queries(%q: tensor<1x0x4xf32>, %k: tensor<1x3x4xf32>, %v: tensor<1x3x4xf32>) -> tensor<1x0x4xf32> {
  %r = "graph.attention"(%q, %k, %v) : (tensor<1x0x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x0x4xf32>
  return %r : tensor<1x0x4xf32>
}

func.func @attention_no_keys(%q: tensor<1x2x4xf32>, %k: tensor<1x0x4xf32>, %v: tensor<1x0x4xf32>) -> tensor<1x2x4xf32> {
  %r = "graph.attention"(%q, %k, %v) : (tensor<1x2x4xf32>, tensor<1x0x4xf32>, tensor<1x0x4xf32>) -> tensor<1x2x4xf32>
  return %r : tensor<1x2x4xf32>
}

// Convolutions: no input channels give the bias; no images, no output
// channels or an empty image an empty result.
func.func @conv2d_no_channels(%x: tensor<1x0x4x4xf32>, %w: tensor<2x0x3x3xf32>, %b: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %r = "graph.conv2d"(%x, %w, %b) : (tensor<1x0x4x4xf32>, tensor<2x0x3x3xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %r : tensor<1x2x2x2xf32>
}

func.func @conv2d_no_images(%x: tensor<0x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<0x3x2x2xf32> {
  %r = "graph.conv2d"(%x, %w) : (tensor<0x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<0x3x2x2xf32>
  return %r : tensor<0x3x2x2xf32>
}

func.func @conv2d_no_filters_summed(%x: tensor<1x2x4x4xf32>, %w: tensor<0x2x3x3xf32>) -> tensor<1x2x2xf32> {
  %c = "graph.conv2d"(%x, %w) : (tensor<1x2x4x4xf32>, tensor<0x2x3x3xf32>) -> tensor<1x0x2x2xf32>
  %r = "graph.reduce_sum"(%c) <{axes = [1], keepdims = false}> : (tensor<1x0x2x2xf32>) -> tensor<1x2x2xf32>
  return %r : tensor<1x2x2xf32>
}

func.func @conv2d_empty_image_padded(%x: tensor<1x2x0x3xf32>, %w: tensor<2x2x1x1xf32>, %b: tensor<2xf32>) -> tensor<1x2x2x3xf32> {
  %r = "graph.conv2d"(%x, %w, %b) <{padding = [1, 0, 1, 0]}> : (tensor<1x2x0x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x3xf32>
  return %r : tensor<1x2x2x3xf32>
}

func.func @conv2d_no_channels_bf16(%x: tensor<1x0x8x8xbf16>, %w: tensor<16x0x3x3xbf16>, %b: tensor<16xbf16>) -> tensor<1x16x6x6xbf16> {
  %r = "graph.conv2d"(%x, %w, %b) : (tensor<1x0x8x8xbf16>, tensor<16x0x3x3xbf16>, tensor<16xbf16>) -> tensor<1x16x6x6xbf16>
  return %r : tensor<1x16x6x6xbf16>
}

// An empty slice at the limit of a non-empty tensor: its index would be
// out of bounds of the operand.
func.func @slice_at_limit_summed(%x: tensor<1x1x1xi32>) -> tensor<i32> {
  %s = "graph.slice"(%x) <{limits = [1, 0, 1], starts = [0, 0, 1], strides = [1, 1, 1]}> : (tensor<1x1x1xi32>) -> tensor<1x0x0xi32>
  %r = "graph.reduce_sum"(%s) <{axes = [0, 1, 2], keepdims = false}> : (tensor<1x0x0xi32>) -> tensor<i32>
  return %r : tensor<i32>
}

// Attention's gradients with no keys (dq zeros, dk and dv empty) and no
// queries (dq empty, dk and dv zeros); bf16 ones for the flash kernels.
func.func @attention_grad_no_keys(%q: tensor<1x3x4xf32>, %k: tensor<1x0x4xf32>, %o: tensor<1x3x4xf32>) -> (tensor<1x3x4xf32>, tensor<1x0x4xf32>, tensor<1x0x4xf32>) {
  %r:3 = "graph.attention_grad"(%q, %k, %k, %o, %o) : (tensor<1x3x4xf32>, tensor<1x0x4xf32>, tensor<1x0x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4xf32>, tensor<1x0x4xf32>, tensor<1x0x4xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x3x4xf32>, tensor<1x0x4xf32>, tensor<1x0x4xf32>
}

func.func @attention_grad_no_queries(%q: tensor<1x0x4xf32>, %k: tensor<1x3x4xf32>) -> (tensor<1x0x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) {
  %r:3 = "graph.attention_grad"(%q, %k, %k, %q, %q) <{causal = true}> : (tensor<1x0x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x0x4xf32>, tensor<1x0x4xf32>) -> (tensor<1x0x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>)
  return %r#0, %r#1, %r#2 : tensor<1x0x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>
}

func.func @attention_bf16_no_keys(%q: tensor<1x2x20x16xbf16>, %k: tensor<1x2x0x16xbf16>) -> tensor<1x2x20x16xbf16> {
  %r = "graph.attention"(%q, %k, %k) : (tensor<1x2x20x16xbf16>, tensor<1x2x0x16xbf16>, tensor<1x2x0x16xbf16>) -> tensor<1x2x20x16xbf16>
  return %r : tensor<1x2x20x16xbf16>
}

func.func @attention_grad_bf16_no_keys(%q: tensor<1x2x20x16xbf16>, %k: tensor<1x2x0x16xbf16>, %o: tensor<1x2x20x16xbf16>) -> (tensor<1x2x20x16xbf16>, tensor<1x2x0x16xbf16>, tensor<1x2x0x16xbf16>) {
  %r:3 = "graph.attention_grad"(%q, %k, %k, %o, %o) : (tensor<1x2x20x16xbf16>, tensor<1x2x0x16xbf16>, tensor<1x2x0x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>) -> (tensor<1x2x20x16xbf16>, tensor<1x2x0x16xbf16>, tensor<1x2x0x16xbf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x20x16xbf16>, tensor<1x2x0x16xbf16>, tensor<1x2x0x16xbf16>
}

func.func @attention_grad_bf16_no_queries(%q: tensor<1x2x0x16xbf16>, %k: tensor<1x2x20x16xbf16>) -> (tensor<1x2x0x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>) {
  %r:3 = "graph.attention_grad"(%q, %k, %k, %q, %q) : (tensor<1x2x0x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x0x16xbf16>, tensor<1x2x0x16xbf16>) -> (tensor<1x2x0x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x0x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>
}
