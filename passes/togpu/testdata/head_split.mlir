// The q and k heads cut out of a fused qkv product [4, 3·2·16] (rows of
// three blocks of two heads of 16): each copy loads at column
// block·32 + head·16 + d, an offset the vector divides, so it moves 8 bf16
// a 16-byte access; the last copy starts at the odd column 3, which no
// vector divides, and stays scalar.
func.func @main(%qkv: memref<4x96xbf16>) -> (memref<4x2x16xbf16>, memref<4x2x16xbf16>, memref<4x2x16xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %q = "loop.alloc"() : () -> memref<4x2x16xbf16>
  "loop.parallel"(%c0, %c0, %c0, %c4, %c2, %c16, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %h: index, %d: index):
    %o = arith.muli %h, %c16 : index
    %col = arith.addi %o, %d : index
    %v = "loop.load"(%qkv, %i, %col) : (memref<4x96xbf16>, index, index) -> bf16
    "loop.store"(%v, %q, %i, %h, %d) : (bf16, memref<4x2x16xbf16>, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  %k = "loop.alloc"() : () -> memref<4x2x16xbf16>
  "loop.parallel"(%c0, %c0, %c0, %c4, %c2, %c16, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %h: index, %d: index):
    %b = arith.addi %c2, %h : index
    %o = arith.muli %b, %c16 : index
    %col = arith.addi %o, %d : index
    %v = "loop.load"(%qkv, %i, %col) : (memref<4x96xbf16>, index, index) -> bf16
    "loop.store"(%v, %k, %i, %h, %d) : (bf16, memref<4x2x16xbf16>, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  %u = "loop.alloc"() : () -> memref<4x2x16xbf16>
  "loop.parallel"(%c0, %c0, %c0, %c4, %c2, %c16, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%i: index, %h: index, %d: index):
    %o = arith.muli %h, %c32 : index
    %s = arith.addi %d, %c3 : index
    %col = arith.addi %o, %s : index
    %v = "loop.load"(%qkv, %i, %col) : (memref<4x96xbf16>, index, index) -> bf16
    "loop.store"(%v, %u, %i, %h, %d) : (bf16, memref<4x2x16xbf16>, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  return %q, %k, %u : memref<4x2x16xbf16>, memref<4x2x16xbf16>, memref<4x2x16xbf16>
}
