// Comparisons, selects and casts.
func.func @cmp(%a: i32, %b: i32, %x: f64) -> (i32, i1, i64, f64) {
  %t = arith.constant true
  %0 = arith.cmpi slt, %a, %b : i32
  %1 = arith.cmpi slt, %a, %b : i32
  %2 = arith.andi %0, %t : i1
  %3 = arith.select %2, %a, %b : i32
  %4 = arith.select %1, %a, %b : i32
  %5 = arith.addi %3, %4 : i32
  %6 = arith.cmpi eq, %a, %a : i32
  %7 = arith.xori %6, %t : i1
  %8 = arith.extsi %a : i32 to i64
  %9 = arith.extsi %a : i32 to i64
  %10 = arith.addi %8, %9 : i64
  %11 = arith.select %t, %x, %x : f64
  %12 = arith.maximumf %11, %11 : f64
  return %5, %7, %10, %12 : i32, i1, i64, f64
}
