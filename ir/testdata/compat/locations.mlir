#loc_alias = loc("aliased.mlir":10:20)
"test.a"() : () -> () loc("file.mlir":1:2)
"test.b"() : () -> () loc(unknown)
"test.c"() : () -> () loc("named")
"test.d"() : () -> () loc("named"("inner.mlir":3:4))
"test.e"() : () -> () loc(callsite("callee.mlir":1:1 at "caller.mlir":2:2))
"test.f"() : () -> () loc(fused["a.mlir":1:1, "b.mlir":2:2])
"test.g"() : () -> () loc(fused<"meta">["a.mlir":1:1])
"test.h"() : () -> () loc(#loc_alias)
"test.i"() ({
^bb0(%a: i32 loc("arg.mlir":5:6), %b: f32 loc(unknown)):
  "test.j"(%a) : (i32) -> () loc("j.mlir":7:8)
}) : () -> () loc("i.mlir":9:9)
