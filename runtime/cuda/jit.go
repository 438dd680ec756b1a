package cuda

// warmPTX is the smallest module the JIT compiles: one empty kernel. Its
// target is the oldest one the driver's PTX ISA 7.8 knows that every GPU
// the project supports runs, so it loads on any of them.
const warmPTX = `.version 7.8
.target sm_50
.address_size 64

.visible .entry strata_warm_jit()
{
	ret;
}
`

// WarmJIT starts the driver's PTX JIT compiler in the background: it loads
// and unloads a one-instruction module on a new goroutine. The first module
// a process loads pays for the JIT's own start-up on top of its compile
// (11–65 ms for an empty kernel on the H200, against 5 ms later: see
// bench/NOTES.md, session 2), so a caller that warms it when it opens the
// device overlaps that with its own work (tracing, lowering, code
// generation, uploads). The channel receives the warm-up's error, nil on
// success; callers may ignore it, as a later LoadModule reports a broken
// JIT with the real PTX. Close waits for the warm-up to finish.
func (dev *Device) WarmJIT() <-chan error {
	done := make(chan error, 1)
	dev.warm.Add(1)
	go func() {
		defer dev.warm.Done()
		m, err := dev.LoadModule(warmPTX)
		if err == nil {
			err = m.Unload()
		}
		done <- err
	}()
	return done
}
