// A function may list bare argument types and name them in its entry
// block; mixing the two forms, or disagreeing, gets mlir-opt's diagnostics.
// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics

func.func @bare(i32, f32) -> i32 {
^entry(%a: i32, %b: f32):
  return %a : i32
}

// -----

// expected-error@+1 {{expected type instead of SSA identifier}}
func.func @mixed(i32, %b: f32) {
  return
}

// -----

// expected-error@+1 {{entry block must have 2 arguments to match function signature}}
func.func @short(i32, f32) {
  return
}

// -----

// expected-error@+1 {{type of entry block argument #1('i32') must match the type of the corresponding argument in function signature('f32')}}
func.func @wrong(i32, f32) {
^bb0(%a: i32, %b: i32):
  return
}
