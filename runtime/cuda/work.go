package cuda

import "sync"

// programWork tracks the program's own work on a device (BeginWork,
// EndWork) for the vendor libraries' timings, which run beside it on
// streams of their own: a candidate timed while the program's kernels
// share the SMs takes longer than alone, and a slower candidate could win.
// A timing (TimeQuiet) waits for the program's work queued so far
// (WaitQuiet) and times again when more was queued meanwhile
// (Perturbed), so that the program's runs never wait for a timing and
// the timings stay those of an idle device.
type programWork struct {
	mu   sync.Mutex
	idle *sync.Cond // signalled when busy drops to zero
	// busy counts the runs being queued; gen counts every run begun.
	busy int
	gen  uint64
	// done is recorded after the latest run queued (nil before the first).
	done *Event
}

// BeginWork marks the start of queuing one run of the program's: timings
// begun before it count as perturbed (Perturbed). Each BeginWork is
// followed by one EndWork.
func (d *Device) BeginWork() {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy++
	w.gen++
}

// EndWork marks the end of queuing a run that BeginWork began: its work
// is what was queued on stream (nil: the default stream) before now, which
// WaitQuiet waits for. The stream must not be capturing a CUDA graph.
func (d *Device) EndWork(stream *Stream) error {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy--
	if w.busy == 0 && w.idle != nil {
		w.idle.Broadcast()
	}
	if w.done == nil {
		ev, err := d.NewSyncEvent()
		if err != nil {
			return err
		}
		w.done = ev
	}
	return w.done.Record(stream)
}

// WaitQuiet waits until no run of the program's is being queued and the
// work of the latest one has finished on the device, and returns the
// count of runs begun, for Perturbed.
func (d *Device) WaitQuiet() (uint64, error) {
	w := &d.work
	w.mu.Lock()
	if w.idle == nil {
		w.idle = sync.NewCond(&w.mu)
	}
	for w.busy > 0 {
		w.idle.Wait()
	}
	gen, done := w.gen, w.done
	w.mu.Unlock()
	if done == nil {
		return gen, nil
	}
	return gen, done.Synchronize()
}

// Perturbed reports whether a run of the program's began since WaitQuiet
// returned gen: a timing made meanwhile may have shared the device with it.
func (d *Device) Perturbed(gen uint64) bool {
	w := &d.work
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen != gen || w.busy > 0
}

// maxRetimes is how many times TimeQuiet makes a timing again after a
// run of the program's began during it: a program that keeps the device
// busy cannot hold a timing back forever.
const maxRetimes = 3

// TimeQuiet makes timing (a vendor library's timing of one candidate,
// beside the program) once the program's work queued so far has finished
// (WaitQuiet), holding TimingLock (another library times its own
// candidates on another stream), and makes it all again, up to maxRetimes
// times, when a run of the program's began meanwhile (Perturbed): the
// timings stay those of an idle device, and the program's runs never wait
// for them. timing reports false when it timed nothing (the library
// refused the candidate); it is not made again then, nor after an error.
// TimeQuiet returns how many times it made timing again.
func (d *Device) TimeQuiet(timing func() (bool, error)) (int, error) {
	for again := 0; ; again++ {
		gen, err := d.WaitQuiet()
		if err != nil {
			return again, err
		}
		d.timing.Lock()
		ok, err := timing()
		d.timing.Unlock()
		if err != nil || !ok || !d.Perturbed(gen) || again == maxRetimes {
			return again, err
		}
	}
}

// FastestRun makes call runs (≥ 1) times, each between start and end on
// stream and waited for, and returns the fastest run's milliseconds: a run that
// other work slowed, or that waited for the host, only ever takes longer.
// call reports false when it queued nothing (a library refused the
// candidate): FastestRun stops and reports false then.
func FastestRun(runs int, call func() (bool, error), stream *Stream, start, end *Event) (float32, bool, error) {
	best := float32(-1)
	for range runs {
		if err := start.Record(stream); err != nil {
			return 0, false, err
		}
		if ok, err := call(); err != nil || !ok {
			return 0, false, err
		}
		if err := end.Record(stream); err != nil {
			return 0, false, err
		}
		if err := end.Synchronize(); err != nil {
			return 0, false, err
		}
		ms, err := Elapsed(start, end)
		if err != nil {
			return 0, false, err
		}
		if best < 0 || ms < best {
			best = ms
		}
	}
	return best, true, nil
}
