func.func @loops(%n: index, %init: f32, %m: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (f32) {
    %v = memref.load %m[%i] : memref<?xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  %cond = arith.cmpf ogt, %r, %init : f32
  %x:2 = scf.if %cond -> (f32, index) {
    scf.yield %r, %c0 : f32, index
  } else {
    scf.yield %init, %c1 : f32, index
  }
  %w = scf.while (%arg = %c0) : (index) -> index {
    %lt = arith.cmpi slt, %arg, %n : index
    scf.condition(%lt) %arg : index
  } do {
  ^bb0(%a: index):
    %nx = arith.addi %a, %c1 : index
    scf.yield %nx : index
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    memref.store %x#0, %m[%i] : memref<?xf32>
    scf.reduce
  }
  return %x#0 : f32
}
func.func @branches(%c: i1, %a: i32, %b: i32) -> i32 {
  cf.cond_br %c, ^bb1(%a : i32), ^bb2
^bb1(%x: i32):
  cf.br ^bb3(%x : i32)
^bb2:
  cf.br ^bb3(%b : i32)
^bb3(%y: i32):
  cf.switch %y : i32, [
    default: ^bb4(%y : i32),
    42: ^bb4(%a : i32),
    43: ^bb5
  ]
^bb4(%z: i32):
  return %z : i32
^bb5:
  cf.assert %c, "message with \"quotes\" and \n newline"
  return %a : i32
}
