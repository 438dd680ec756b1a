"test.module"() ({
  %0:2 = "test.multi"() : () -> (i32, f32)
  %1 = "test.use"(%0#1, %0#0) : (f32, i32) -> i64
  "test.empty_region"() ({
  }) : () -> ()
  "test.two_empty"() ({}, {}) : () -> ()
  "test.nested"(%1) ({
  ^bb0(%a: i64, %b: f32):
    "test.inner"(%a, %0#0) ({
    ^bb0(%c: i64):
      "test.deep"(%c, %a, %b) : (i64, i64, f32) -> ()
      "test.term"() : () -> ()
    }) : (i64, i32) -> ()
    "test.br"()[^bb1] : () -> ()
  ^bb1:
    "test.cond"()[^bb2, ^bb1] : () -> ()
  ^bb2(%d: f32):
    "test.ret"(%d) : (f32) -> ()
  }, {
    "test.second"() : () -> ()
  }) : (i64) -> ()
  "test.forward"() ({
    "test.use_later"(%late) : (i32) -> ()
    %late = "test.def"() : () -> i32
  }) : () -> ()
  "test.props"() <{prop = 1 : i32, p2 = [1, 2]}> {disc = "x"} : () -> ()
  "test.zero"() : () -> ()
  %r:3 = "test.three"() : () -> (i1, i1, i1)
  "test.consume"(%r#2, %r#0) : (i1, i1) -> ()
  "test.isolated"() ({
  ^bb0(%arg0: tensor<?xf32>):
    "test.r"(%arg0) : (tensor<?xf32>) -> ()
  }) {sym_name = "iso"} : () -> ()
}) : () -> ()
