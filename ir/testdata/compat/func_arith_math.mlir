func.func @arith(%a: f32, %b: f32, %i: i32, %j: index) -> (f32, i32) {
  %0 = arith.addf %a, %b : f32
  %1 = arith.mulf %0, %b fastmath<fast> : f32
  %c = arith.constant 42 : i32
  %c1 = arith.constant -1 : i8
  %cb = arith.constant true
  %f = arith.constant 3.14159 : f32
  %f64 = arith.constant 0.1 : f64
  %h = arith.constant 1.0e-3 : f16
  %bf = arith.constant 2.5 : bf16
  %2 = arith.addi %i, %c : i32
  %3 = arith.cmpi slt, %2, %c : i32
  %4 = arith.select %3, %2, %c : i32
  %5 = math.exp %1 : f32
  %6 = math.tanh %5 : f32
  %7 = math.sqrt %6 : f32
  %8 = arith.index_cast %j : index to i64
  %9 = arith.cmpf olt, %7, %a : f32
  %t = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %u = arith.addf %t, %t : tensor<4xf32>
  return %7, %4 : f32, i32
}
func.func private @decl(i32, f32) -> () attributes {llvm.linkage = 1 : i64}
func.func @call() {
  %0 = arith.constant 1 : i32
  %1 = arith.constant 1.0 : f32
  func.call @decl(%0, %1) : (i32, f32) -> ()
  return
}
