// Redundant integer arithmetic: identities, constants, duplicates.
func.func @ints(%a: i32, %b: i32) -> (i32, i32, i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %0 = arith.addi %a, %c0 : i32
  %1 = arith.muli %0, %c1 : i32
  %2 = arith.addi %c2, %c3 : i32
  %3 = arith.muli %a, %b : i32
  %4 = arith.muli %b, %a : i32
  %5 = arith.addi %3, %4 : i32
  %6 = arith.subi %5, %5 : i32
  %7 = arith.addi %1, %2 : i32
  %8 = arith.addi %7, %6 : i32
  %9 = arith.xori %b, %b : i32
  %10 = arith.ori %8, %9 : i32
  %11 = arith.andi %10, %10 : i32
  %dead = arith.divsi %a, %b : i32
  return %11, %5, %3 : i32, i32, i32
}
