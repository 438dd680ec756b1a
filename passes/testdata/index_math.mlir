// Index arithmetic with constants to fold and shifts.
func.func @index(%i: index, %j: index) -> (index, index, i32) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %0 = arith.muli %i, %c4 : index
  %1 = arith.muli %c4, %i : index
  %2 = arith.addi %0, %1 : index
  %3 = arith.muli %c4, %c8 : index
  %4 = arith.addi %2, %3 : index
  %5 = arith.divui %j, %c4 : index
  %6 = arith.remui %j, %c4 : index
  %7 = arith.addi %5, %c0 : index
  %8 = arith.index_cast %i : index to i32
  %c5 = arith.constant 5 : i32
  %c7 = arith.constant 7 : i32
  %10 = arith.shli %c5, %c7 : i32
  %11 = arith.addi %10, %8 : i32
  %12 = arith.addi %j, %6 : index
  %13 = arith.addi %12, %7 : index
  return %4, %13, %11 : index, index, i32
}
