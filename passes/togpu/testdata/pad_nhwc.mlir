// Channels-last padding: the conditions test h and w, never the channel
// (the innermost index), so every lane of a vector chunk takes the same
// branch and the nest is vectorized, the loads inside the branches one
// vector access (nested ifs with results, a store in an if without
// results). The last two nests' conditions test the channel, the second
// through an if's result: scalar.
func.func @main(%x: memref<2x4x4x8xbf16>) -> (memref<2x6x6x8xbf16>, memref<2x4x4x8xbf16>, memref<2x4x4x8xbf16>, memref<2x4x4x8xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %ninf = arith.constant 0xFF80 : bf16
  %zero = arith.constant 0.000000e+00 : bf16
  %p = "loop.alloc"() : () -> memref<2x6x6x8xbf16>
  "loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c6, %c6, %c8, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%n: index, %h: index, %w: index, %c: index):
    %h1 = arith.subi %h, %c1 : index
    %w1 = arith.subi %w, %c1 : index
    %hlo = arith.cmpi sge, %h, %c1 : index
    %hhi = arith.cmpi slt, %h, %c5 : index
    %hin = arith.andi %hlo, %hhi : i1
    %v = "loop.if"(%hin) ({
      %wlo = arith.cmpi sge, %w, %c1 : index
      %whi = arith.cmpi slt, %w, %c5 : index
      %win = arith.andi %wlo, %whi : i1
      %u = "loop.if"(%win) ({
        %l = "loop.load"(%x, %n, %h1, %w1, %c) : (memref<2x4x4x8xbf16>, index, index, index, index) -> bf16
        "loop.yield"(%l) : (bf16) -> ()
      }, {
        "loop.yield"(%ninf) : (bf16) -> ()
      }) : (i1) -> bf16
      "loop.yield"(%u) : (bf16) -> ()
    }, {
      "loop.yield"(%zero) : (bf16) -> ()
    }) : (i1) -> bf16
    "loop.store"(%v, %p, %n, %h, %w, %c) : (bf16, memref<2x6x6x8xbf16>, index, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  %o = "loop.alloc"() : () -> memref<2x4x4x8xbf16>
  "loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c4, %c4, %c8, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%n: index, %h: index, %w: index, %c: index):
    "loop.store"(%zero, %o, %n, %h, %w, %c) : (bf16, memref<2x4x4x8xbf16>, index, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  "loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c4, %c4, %c8, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%n: index, %h: index, %w: index, %c: index):
    %odd = arith.cmpi sge, %w, %h : index
    "loop.if"(%odd) ({
      %l = "loop.load"(%x, %n, %h, %w, %c) : (memref<2x4x4x8xbf16>, index, index, index, index) -> bf16
      "loop.store"(%l, %o, %n, %h, %w, %c) : (bf16, memref<2x4x4x8xbf16>, index, index, index, index) -> ()
      "loop.yield"() : () -> ()
    }, {
    }) : (i1) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  %m = "loop.alloc"() : () -> memref<2x4x4x8xbf16>
  "loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c4, %c4, %c8, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%n: index, %h: index, %w: index, %c: index):
    %lo = arith.cmpi slt, %c, %c3 : index
    %v = "loop.if"(%lo) ({
      %l = "loop.load"(%x, %n, %h, %w, %c) : (memref<2x4x4x8xbf16>, index, index, index, index) -> bf16
      "loop.yield"(%l) : (bf16) -> ()
    }, {
      "loop.yield"(%zero) : (bf16) -> ()
    }) : (i1) -> bf16
    "loop.store"(%v, %m, %n, %h, %w, %c) : (bf16, memref<2x4x4x8xbf16>, index, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  %r = "loop.alloc"() : () -> memref<2x4x4x8xbf16>
  "loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c4, %c4, %c8, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%n: index, %h: index, %w: index, %c: index):
    %hlo = arith.cmpi sge, %h, %c1 : index
    %t = "loop.if"(%hlo) ({
      %lo = arith.cmpi slt, %c, %c3 : index
      "loop.yield"(%lo) : (i1) -> ()
    }, {
      %f = arith.cmpi slt, %c, %c0 : index
      "loop.yield"(%f) : (i1) -> ()
    }) : (i1) -> i1
    %v = "loop.if"(%t) ({
      %l = "loop.load"(%x, %n, %h, %w, %c) : (memref<2x4x4x8xbf16>, index, index, index, index) -> bf16
      "loop.yield"(%l) : (bf16) -> ()
    }, {
      "loop.yield"(%zero) : (bf16) -> ()
    }) : (i1) -> bf16
    "loop.store"(%v, %r, %n, %h, %w, %c) : (bf16, memref<2x4x4x8xbf16>, index, index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  return %p, %o, %m, %r : memref<2x6x6x8xbf16>, memref<2x4x4x8xbf16>, memref<2x4x4x8xbf16>, memref<2x4x4x8xbf16>
}
