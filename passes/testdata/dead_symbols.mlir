// Private helpers, some unreferenced, some calling each other.
func.func private @helper(%a: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %0 = arith.addi %a, %c1 : i64
  return %0 : i64
}
func.func private @unused(%a: i64) -> i64 {
  %0 = func.call @also_unused(%a) : (i64) -> i64
  return %0 : i64
}
func.func private @also_unused(%a: i64) -> i64 {
  %0 = func.call @unused(%a) : (i64) -> i64
  return %0 : i64
}
func.func @main(%a: i64, %b: i64) -> i64 {
  %0 = func.call @helper(%a) : (i64) -> i64
  %1 = func.call @helper(%a) : (i64) -> i64
  %2 = arith.addi %0, %1 : i64
  %c0 = arith.constant 0 : i64
  %3 = arith.muli %b, %c0 : i64
  %4 = arith.addi %2, %3 : i64
  return %4 : i64
}
