// RUN: irc %s --split-input-file --verify-diagnostics

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @count(%a: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error@+1 {{'gpu.launch_func' op got 2 kernel operands but expected 1}}
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>, %c1 : index)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @type(%a: memref<?xi32>) {
    %c1 = arith.constant 1 : index
    // expected-error@+1 {{'gpu.launch_func' op type of function argument 0 does not match}}
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xi32>)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @helper(%a: memref<?xf32>) {
      gpu.return
    }
  }
  func.func @not_kernel(%a: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error@+1 {{'gpu.launch_func' op kernel function is missing the 'gpu.kernel' attribute}}
    gpu.launch_func @m::@helper blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  func.func @undefined() {
    %c1 = arith.constant 1 : index
    // expected-error@+1 {{'gpu.launch_func' op kernel container 'm' is undefined}}
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

module {
  gpu.module @m {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func @no_container() {
    %c1 = arith.constant 1 : index
    // expected-error@+1 {{'gpu.launch_func' op expected the closest surrounding module to have the 'gpu.container_module' attribute}}
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

gpu.module @m {
  // expected-error@+1 {{'gpu.func' op expected void return type for kernel function}}
  gpu.func @k() -> f32 kernel {
    %c = arith.constant 1.0 : f32
    gpu.return %c : f32
  }
}

// -----

gpu.module @m {
  gpu.func @k() -> f32 {
    %c = arith.constant 1 : i32
    // expected-error@+1 {{'gpu.return' op unexpected type `'i32'' for operand #0}}
    gpu.return %c : i32
  }
}

// -----

gpu.module @m {
  gpu.func @k(%v: f16, %o: i32) kernel {
    // expected-error@+1 {{'gpu.shuffle' op operand #0 must be i32, i64, f32 or f64, but got 'f16'}}
    %r, %ok = gpu.shuffle xor %v, %o, %o : f16
    gpu.return
  }
}

// -----

func.func @outside() {
  // expected-error@+1 {{'gpu.return' op expects parent op 'gpu.func'}}
  gpu.return
}

// -----

func.func @host_thread_id() -> index {
  // expected-error@+1 {{'gpu.thread_id' op must be nested in a 'gpu.func'}}
  %0 = gpu.thread_id x
  return %0 : index
}

// -----

gpu.module @m {
  // expected-error@+1 {{'gpu.func' op expected memref type in address space 3 in workgroup attribution, got memref<4xf32>}}
  gpu.func @k() workgroup(%b : memref<4xf32>) kernel {
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error@+1 {{'gpu.func' op expected memref type in address space 5 in private attribution, got memref<4xf32, 3>}}
  gpu.func @k() private(%b : memref<4xf32, 3>) kernel {
    gpu.return
  }
}
