#map = affine_map<(d0, d1)[s0] -> (d0 * s0 + d1)>
#set = affine_set<(d0) : (d0 - 10 >= 0, d0 == 0)>
func.func @mem(%arg0: memref<4x?xf32, strided<[?, 1], offset: ?>>, %arg1: memref<8xi8, 3>, %arg2: memref<2x3xf32, #map>, %arg3: memref<4xf32, #gpu.address_space<workgroup>>, %i: index) {
  %a = memref.alloc(%i) : memref<?x4xf32>
  %b = memref.alloca() {alignment = 64 : i64} : memref<16xf16, 1>
  %s = memref.subview %a[0, 0] [2, 2] [1, 1] : memref<?x4xf32> to memref<2x2xf32, strided<[4, 1]>>
  %c = memref.cast %a : memref<?x4xf32> to memref<*xf32>
  %d = memref.dim %a, %i : memref<?x4xf32>
  memref.dealloc %a : memref<?x4xf32>
  %v = memref.alloc() : memref<8xf32, strided<[1], offset: 4>>
  %r = memref.reinterpret_cast %arg1 to offset: [0], sizes: [2, 4], strides: [4, 1] : memref<8xi8, 3> to memref<2x4xi8, 3>
  return
}
func.func @tens(%t: tensor<?x4xf32>, %u: tensor<4x4xf32, #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>>, %i: index) -> tensor<?x4xf32> {
  %e = tensor.empty(%i) : tensor<?x4xf32>
  %x = tensor.extract %t[%i, %i] : tensor<?x4xf32>
  %ins = tensor.insert %x into %e[%i, %i] : tensor<?x4xf32>
  %c = tensor.cast %ins : tensor<?x4xf32> to tensor<*xf32>
  %g = tensor.generate %i {
  ^bb0(%p: index, %q: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<?x4xf32>
  %col = tensor.collapse_shape %g [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
  %ex = tensor.expand_shape %col [[0, 1]] output_shape [%i, 4] : tensor<?xf32> into tensor<?x4xf32>
  %p = tensor.pad %t low[0, 1] high[%i, 2] {
  ^bb0(%p0: index, %p1: index):
    %z = arith.constant -0.0 : f32
    tensor.yield %z : f32
  } : tensor<?x4xf32> to tensor<?x7xf32>
  return %ex : tensor<?x4xf32>
}
func.func @vec(%v: vector<4xf32>, %w: vector<[4]x2xf32>, %m: memref<?xf32>, %i: index) -> vector<4xf32> {
  %0 = vector.broadcast %i : index to vector<4xindex>
  %1 = vector.splat %i : vector<2x2xindex>
  %2 = vector.extract %v[1] : f32 from vector<4xf32>
  %3 = vector.load %m[%i] : memref<?xf32>, vector<4xf32>
  %4 = vector.fma %v, %3, %v : vector<4xf32>
  %5 = vector.reduction <add>, %4 : vector<4xf32> into f32
  %6 = vector.shuffle %v, %v [0, 5, 2, 7] : vector<4xf32>, vector<4xf32>
  %s = vector.shape_cast %w : vector<[4]x2xf32> to vector<[8]xf32>
  %m2 = vector.splat %2 : vector<2x4xf32>
  %acc = vector.splat %2 : vector<2xf32>
  %c = vector.contract {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>} %m2, %v, %acc : vector<2x4xf32>, vector<4xf32> into vector<2xf32>
  return %4 : vector<4xf32>
}
