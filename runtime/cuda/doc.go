// Package cuda is Strata's binding of the CUDA driver API.
//
// The driver (libcuda.so.1) is loaded when it is first needed, with purego,
// never linked at build time: a Strata binary builds with CGO_ENABLED=0,
// runs on machines without a GPU, and reports a missing driver as
// ErrNoDriver instead of failing to start.
//
// A CUDA context is current per OS thread, and Go moves goroutines between
// threads. Every method that enters the driver therefore locks its
// goroutine to the OS thread and makes the device's primary context current
// for the duration of the call, so a Device can be used from any goroutine.
//
// Driver failures are *Error values carrying the CUresult code and its name
// (CUDA_ERROR_INVALID_PTX, ...); running out of device memory is an
// *OutOfMemoryError that says how many bytes were asked for and how many
// were free; a PTX module the JIT rejects is a *JITError holding the
// compiler's log.
//
// Kernel arguments are Go values marshalled per the kernel ABI of
// docs/lowering.md; see (*Device).Launch.
package cuda
