package cuda

// Interoperation with CUDA libraries that Strata loads beside the driver
// (runtime/cublaslt): they run on the context current on the calling
// thread and take raw stream handles.

// WithContext runs f with the goroutine locked to its OS thread and the
// device's primary context current on it, as every driver call of Device
// is, for a library entry point that uses the current context.
func (dev *Device) WithContext(f func() error) error {
	var err error
	if cerr := dev.call("cuCtxSetCurrent", func() Result { err = f(); return Success }); cerr != nil {
		return cerr
	}
	return err
}

// Handle returns the CUstream of s; the nil Stream is the default stream,
// handle 0.
func (s *Stream) Handle() uintptr {
	if s == nil {
		return 0
	}
	return s.s
}
