// elementwise.mlir on bf16 rows of 16: one 16-byte access of 8 points a buffer.
func.func @main(%x: memref<?x16xbf16>, %y: memref<16xbf16>) -> memref<?x16xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = "loop.dim"(%x) <{index = 0 : i64}> : (memref<?x16xbf16>) -> index
  %out = "loop.alloc"(%n) : (index) -> memref<?x16xbf16>
  %two = arith.constant 2.0 : bf16
  "loop.parallel"(%c0, %c0, %n, %c16, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %a = "loop.load"(%x, %i, %j) : (memref<?x16xbf16>, index, index) -> bf16
    %b = "loop.load"(%y, %j) : (memref<16xbf16>, index) -> bf16
    %m = arith.mulf %a, %two : bf16
    %s = arith.addf %m, %b : bf16
    "loop.store"(%s, %out, %i, %j) : (bf16, memref<?x16xbf16>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return %out : memref<?x16xbf16>
}
