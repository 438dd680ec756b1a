// Package exec runs launch plans on an NVIDIA GPU.
//
// A launch plan is the host func.func that convert-loop-to-gpu leaves next
// to its gpu.module kernels (docs/lowering.md): loop.alloc and
// loop.dealloc, loop.dim and loop.view, arith index math for grid and
// block sizes, gpu.launch_func and a func.return of memrefs.
//
// Compile translates every gpu.module to LLVM IR (targets/llvm) and PTX
// (targets/nvptx) and keeps the host functions; NewProgram rebuilds a
// Program from PTX already compiled (a compile-cache hit). Each host
// function is checked once, when first used, and turned into a flat list
// of steps over numbered value slots, so running it evaluates no IR and
// looks nothing up by name: an op the executor does not support is a
// located error then, not in the middle of a run.
//
// A Runtime holds what runs plans: the device, a caching allocator and the
// loaded PTX modules (loaded once per distinct PTX text). Program.Run
// copies the arguments to the device, runs the plan and copies the results
// back, with the results as the reference interpreter gives them
// (interp.Buffer for a memref, a rank-0 interp.Tensor for a scalar).
// Benchmarks split that in three: Prepare uploads the inputs once,
// Bound.Launch runs the plan alone, and Bound.Time times it with CUDA
// events, so kernels are measured, not copies.
package exec
