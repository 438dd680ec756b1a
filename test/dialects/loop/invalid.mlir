// RUN: irc %s --split-input-file --verify-diagnostics

func.func @alloc_count(%n: index) {
  // expected-error@+1 {{'loop.alloc' op dimension operand count (1) does not equal memref dynamic dimension count (2) of 'memref<?x?xf32>'}}
  %a = "loop.alloc"(%n) : (index) -> memref<?x?xf32>
  return
}

// -----

func.func @alloc_align() {
  // expected-error@+1 {{'loop.alloc' op attribute 'alignment' failed to satisfy constraint: 64-bit signless integer attribute whose value is a positive power of two, but got 3 : i64}}
  %a = loop.alloc() {alignment = 3 : i64} : memref<4xf32>
  return
}

// -----

func.func @alloc_tensor() {
  // expected-error@+1 {{'loop.alloc' op result must be a ranked memref, but got 'tensor<4xf32>'}}
  %a = "loop.alloc"() : () -> tensor<4xf32>
  return
}

// -----

func.func @load_count(%m: memref<4x4xf32>, %i: index) -> f32 {
  // expected-error@+1 {{'loop.load' op incorrect number of indices for load, expected 2 but got 1}}
  %v = "loop.load"(%m, %i) : (memref<4x4xf32>, index) -> f32
  return %v : f32
}

// -----

func.func @load_type(%m: memref<4xf32>, %i: index) -> f64 {
  // expected-error@+1 {{'loop.load' op result type must be the element type 'f32' of 'memref<4xf32>', but got (f64)}}
  %v = "loop.load"(%m, %i) : (memref<4xf32>, index) -> f64
  return %v : f64
}

// -----

func.func @load_index(%m: memref<4xf32>, %i: i32) -> f32 {
  // expected-error@+1 {{'loop.load' op operand #1 must be index, but got 'i32'}}
  %v = "loop.load"(%m, %i) : (memref<4xf32>, i32) -> f32
  return %v : f32
}

// -----

func.func @store_type(%m: memref<4xf32>, %i: index, %v: f64) {
  // expected-error@+1 {{'loop.store' op value type 'f64' must match the element type 'f32' of 'memref<4xf32>'}}
  "loop.store"(%v, %m, %i) : (f64, memref<4xf32>, index) -> ()
  return
}

// -----

func.func @store_count(%m: memref<4xf32>, %i: index, %v: f32) {
  // expected-error@+1 {{'loop.store' op incorrect number of indices for store, expected 1 but got 2}}
  "loop.store"(%v, %m, %i, %i) : (f32, memref<4xf32>, index, index) -> ()
  return
}

// -----

func.func @dim_range(%m: memref<4x?xf32>) -> index {
  // expected-error@+1 {{'loop.dim' op index 2 is out of range for 'memref<4x?xf32>' of rank 2}}
  %d = loop.dim %m, 2 : memref<4x?xf32>
  return %d : index
}

// -----

func.func @dealloc_tensor(%t: tensor<4xf32>) {
  // expected-error@+1 {{'loop.dealloc' op operand #0 must be a ranked memref, but got 'tensor<4xf32>'}}
  "loop.dealloc"(%t) : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @for_bounds(%lb: i32, %n: index) {
  // expected-error@+1 {{'loop.for' op operand #0 must be index, but got 'i32'}}
  "loop.for"(%lb, %n, %n) ({
  ^bb0(%i: index):
    loop.yield
  }) : (i32, index, index) -> ()
  return
}

// -----

func.func @for_results(%n: index, %x: f32) {
  // expected-error@+1 {{'loop.for' op mismatch in number of loop-carried values (1) and results (0)}}
  "loop.for"(%n, %n, %n, %x) ({
  ^bb0(%i: index, %a: f32):
    loop.yield %a : f32
  }) : (index, index, index, f32) -> ()
  return
}

// -----

func.func @for_args(%n: index, %x: f32) -> f32 {
  // expected-error@+1 {{'loop.for' op expects 2 body arguments (the induction variable and 1 iter args), but found 1}}
  %r = "loop.for"(%n, %n, %n, %x) ({
  ^bb0(%i: index):
    loop.yield %x : f32
  }) : (index, index, index, f32) -> f32
  return %r : f32
}

// -----

func.func @for_yield(%n: index, %x: f32, %y: f64) -> f32 {
  // expected-error@+1 {{'loop.for' op 'loop.yield' operand #0 has type 'f64', but the enclosing 'loop.for' expects 'f32'}}
  %r = "loop.for"(%n, %n, %n, %x) ({
  ^bb0(%i: index, %a: f32):
    loop.yield %y : f64
  }) : (index, index, index, f32) -> f32
  return %r : f32
}

// -----

func.func @parallel_segments(%n: index) {
  // expected-error@+1 {{'loop.parallel' op expects the same number of lower bounds (2), upper bounds (1) and steps (1)}}
  "loop.parallel"(%n, %n, %n, %n) <{operandSegmentSizes = array<i32: 2, 1, 1, 0>}> ({
  ^bb0(%i: index):
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index) -> ()
  return
}

// -----

func.func @parallel_sum(%n: index) {
  // expected-error@+1 {{'loop.parallel' op 'operandSegmentSizes' = array<i32: 1, 1, 1, 0> sums to 3, but the op has 4 operands}}
  "loop.parallel"(%n, %n, %n, %n) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index) -> ()
  return
}

// -----

func.func @parallel_ivs(%n: index) {
  // expected-error@+1 {{'loop.parallel' op expects 1 induction variables as body arguments, but found 2}}
  "loop.parallel"(%n, %n, %n) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index, %j: index):
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  return
}

// -----

func.func @parallel_results(%n: index, %x: f32) {
  // expected-error@+1 {{'loop.parallel' op expects number of results (0) to be the same as number of initial values (1)}}
  "loop.parallel"(%n, %n, %n, %x) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    "loop.reduce"() : () -> ()
  }) : (index, index, index, f32) -> ()
  return
}

// -----

func.func @parallel_terminator(%n: index) {
  // expected-error@+1 {{'loop.parallel' op expects its body to end with 'loop.reduce', but found 'loop.yield'}}
  "loop.parallel"(%n, %n, %n) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    // expected-error@+1 {{'loop.yield' op expects parent op to be one of}}
    loop.yield
  }) : (index, index, index) -> ()
  return
}

// -----

func.func @parallel_reduce_type(%n: index, %x: f32, %y: f64) -> f32 {
  // expected-error@+1 {{'loop.parallel' op 'loop.reduce' operand #0 has type 'f64', but result #0 has type 'f32'}}
  %r = "loop.parallel"(%n, %n, %n, %x) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    "loop.reduce"(%y) ({
    ^bb0(%a: f64, %b: f64):
      loop.yield %a : f64
    }) : (f64) -> ()
  }) : (index, index, index, f32) -> f32
  return %r : f32
}

// -----

func.func @reduce_regions(%n: index, %x: f32) -> f32 {
  %r = "loop.parallel"(%n, %n, %n, %x) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    // expected-error@+1 {{'loop.reduce' op expects number of reduction regions (0) to be the same as number of reduced values (1)}}
    "loop.reduce"(%x) : (f32) -> ()
  }) : (index, index, index, f32) -> f32
  return %r : f32
}

// -----

func.func @reduce_args(%n: index, %x: f32) -> f32 {
  %r = "loop.parallel"(%n, %n, %n, %x) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    // expected-error@+1 {{'loop.reduce' op expects two arguments of type 'f32' in reduction region #0, but found (f32)}}
    "loop.reduce"(%x) ({
    ^bb0(%a: f32):
      loop.yield %a : f32
    }) : (f32) -> ()
  }) : (index, index, index, f32) -> f32
  return %r : f32
}

// -----

func.func @reduce_yield(%n: index, %x: f32) -> f32 {
  %r = "loop.parallel"(%n, %n, %n, %x) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    // expected-error@+1 {{'loop.reduce' op reduction region #0: 'loop.yield' passes 2 values, but the enclosing 'loop.reduce' expects 1}}
    "loop.reduce"(%x) ({
    ^bb0(%a: f32, %b: f32):
      loop.yield %a, %b : f32, f32
    }) : (f32) -> ()
  }) : (index, index, index, f32) -> f32
  return %r : f32
}

// -----

func.func @reduce_parent(%x: f32) {
  // expected-error@+1 {{'loop.reduce' op expects parent op 'loop.parallel'}}
  "loop.reduce"() : () -> ()
}

// -----

func.func @if_cond(%c: i32) {
  // expected-error@+1 {{'loop.if' op requires one i1 condition operand, but got (i32)}}
  "loop.if"(%c) ({
    loop.yield
  }, {
  }) : (i32) -> ()
  return
}

// -----

func.func @if_else(%c: i1, %x: f32) -> f32 {
  // expected-error@+1 {{'loop.if' op must have an else region when it has results (1)}}
  %r = "loop.if"(%c) ({
    loop.yield %x : f32
  }, {
  }) : (i1) -> f32
  return %r : f32
}

// -----

func.func @if_yield(%c: i1, %x: f32) -> f32 {
  // expected-error@+1 {{'loop.if' op else region: 'loop.yield' passes 0 values, but the enclosing 'loop.if' expects 1}}
  %r = "loop.if"(%c) ({
    loop.yield %x : f32
  }, {
    loop.yield
  }) : (i1) -> f32
  return %r : f32
}

// -----

func.func @yield_parent(%x: f32) -> f32 {
  // expected-error@+1 {{'loop.yield' op expects parent op to be one of 'loop.for', 'loop.if', 'loop.reduce'}}
  loop.yield %x : f32
}
