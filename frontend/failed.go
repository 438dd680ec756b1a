package frontend

// Failed returns a tensor that holds err, as a failed op does: ops on it
// fail with the same error, and a compiled function returning it fails
// with err. Layer libraries built on the frontend (package nn) use it to
// report a bad argument, located at their caller's line, without running
// anything.
func Failed(err error) *Tensor { return failed(err) }
