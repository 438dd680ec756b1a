func.func @scale(%x: i32, %n: index) -> (i32, i32, index) {
  %c8 = arith.constant 8 : i32
  %c6 = arith.constant 6 : i32
  %c4 = arith.constant 4 : index
  %0 = arith.muli %x, %c8 : i32
  %1 = arith.muli %c6, %x : i32
  %2 = arith.muli %c4, %n : index
  return %0, %1, %2 : i32, i32, index
}
