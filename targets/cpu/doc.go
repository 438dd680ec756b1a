// Package cpu is Strata's host CPU target: it translates a program at the
// loop level (after lower-to-loop) into an LLVM IR module for the host,
// built with github.com/llir/llvm, and compiles that module with LLVM's
// opt and llc into an object that the system linker turns into a shared
// library (docs/cpu-backend.md).
//
// Every top-level loop.parallel nest of a function becomes one exported
// C-ABI kernel,
//
//	void <func>_kernel_<i>(T0* noalias a0, i64 a0_dim…, …, i64 lo, i64 hi)
//
// taking, in order of first use in the nest, a pointer per buffer (each
// followed by its dynamic sizes) and a 64-bit word per host scalar, and
// running the points [lo, hi) of the nest's outer iteration space: the
// flattened product of every parallel dimension but the last (all of it
// for a 1-D nest), with the last dimension as a plain inner loop. Next to
// it, <func>_kernel_<i>_packed(i64* args, i64 lo, i64 hi) reads the same
// arguments from an array of words, so a caller passes three arguments
// whatever the kernel takes. The host side of a function — allocations,
// sizes, views, constant buffers, the kernels' ranges — stays ordinary IR
// that runtime/cpu executes, splitting each kernel's range across cores.
package cpu
