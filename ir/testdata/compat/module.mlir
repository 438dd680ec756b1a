module @named attributes {test.attr = 1 : i32} {
  module @inner {
    func.func @f() {
      return
    }
  }
  "test.op"() {ref = @inner::@f} : () -> ()
}
