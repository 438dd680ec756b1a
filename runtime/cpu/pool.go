package cpu

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ebitengine/purego"
)

// spinFor is how long, by default, a pool worker polls for its next
// range before it sleeps, and a dispatcher for its workers. Waking a
// sleeping goroutine's thread takes microseconds, and Go wakes the
// threads of a fan-out one after another, so that on 16 cores the last
// range of a kernel would start tens of microseconds after the first;
// kernels of a model follow each other far closer than this, and
// between them the workers stay awake (as OpenMP's threads do). With one
// worker (two cores) there is no chain of wake-ups to save, and the
// workers do not poll. STRATA_CPU_SPIN (a duration, "0" for none)
// overrides it, for machines whose cores are shared with other work.
const spinFor = 200 * time.Microsecond

// spinTime returns how long the workers of a pool of n poll: spinFor,
// none for one worker, or STRATA_CPU_SPIN's.
func spinTime(n int) (time.Duration, error) {
	if s := os.Getenv("STRATA_CPU_SPIN"); s != "" {
		if s == "0" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return spinFor, fmt.Errorf("STRATA_CPU_SPIN=%q is not a duration (such as 200us, or 0)", s)
		}
		return d, nil
	}
	if n <= 1 {
		return 0, nil
	}
	return spinFor, nil
}

// pool is the process's kernel workers: GOMAXPROCS−1 goroutines (made at
// the first parallel kernel) that run the ranges of one kernel at a time
// next to the goroutine that launches it.
type pool struct {
	// busy is held by the dispatch in progress; a concurrent one (two
	// programs, or one program's calls from two goroutines) starts
	// goroutines of its own instead.
	busy    sync.Mutex
	workers []*worker
	// spin is how long workers and dispatchers poll before they sleep.
	spin time.Duration
	// job is the job posted last.
	job atomic.Pointer[job]
	// done carries the last worker's word to a dispatcher asleep in await.
	done chan struct{}
}

// job is one kernel launch: fn(args, lo, hi) over range w of n of
// [0, total) for each worker w < n−1 (the dispatcher runs the last). It
// does not change once posted.
type job struct {
	fn, args uintptr
	total    int64
	n        int
	// pending counts the workers' ranges not finished; waiting is set
	// while the dispatcher sleeps on the pool's done for them.
	pending atomic.Int64
	waiting atomic.Bool
}

// worker is one goroutine of the pool.
type worker struct {
	index int
	// sleeping is set while the worker waits on wake.
	sleeping atomic.Bool
	wake     chan struct{}
}

var (
	poolOnce sync.Once
	thePool  *pool
)

// getPool returns the process's pool, made on first use.
func getPool() *pool {
	poolOnce.Do(func() {
		n := runtime.GOMAXPROCS(0) - 1
		spin, err := spinTime(n)
		if err != nil {
			fmt.Fprintf(os.Stderr, "strata: cpu backend: %v; polling for %v\n", err, spin)
		}
		thePool = newPool(n, spin)
	})
	return thePool
}

// newPool starts a pool of n workers that poll for spin.
func newPool(n int, spin time.Duration) *pool {
	p := &pool{done: make(chan struct{}, 1), spin: spin}
	for i := range n {
		w := &worker{index: i, wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.serve(w)
	}
	return p
}

// bounds returns range w of n over [0, total).
func bounds(total int64, w, n int) (lo, hi int64) {
	return total * int64(w) / int64(n), total * int64(w+1) / int64(n)
}

// run calls fn over [0, total) in n contiguous ranges: n−1 on the pool's
// workers, the last on the calling goroutine. It reports false, having
// run nothing, when the pool is too small or another dispatch holds it.
func (p *pool) run(fn, args uintptr, total int64, n int) bool {
	if n-1 > len(p.workers) || !p.busy.TryLock() {
		return false
	}
	defer p.busy.Unlock()
	j := &job{fn: fn, args: args, total: total, n: n}
	j.pending.Store(int64(n - 1))
	p.job.Store(j)
	for _, w := range p.workers[:n-1] {
		if w.sleeping.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	lo, hi := bounds(total, n-1, n)
	purego.SyscallN(fn, args, uintptr(lo), uintptr(hi))
	p.await(j)
	return true
}

// await returns when the workers' ranges of j are finished.
func (p *pool) await(j *job) {
	deadline := time.Now().Add(p.spin)
	for i := 0; j.pending.Load() > 0; i++ {
		if i%256 == 255 && time.Now().After(deadline) {
			j.waiting.Store(true)
			if j.pending.Load() == 0 && j.waiting.CompareAndSwap(true, false) {
				return
			}
			<-p.done // the worker that finished last cleared waiting and sent
			return
		}
	}
}

// serve is a worker's loop: it waits for each job after the last it saw
// and runs its range of it if the job has one.
func (p *pool) serve(w *worker) {
	var seen *job
	for {
		j := p.next(w, seen)
		seen = j
		if w.index >= j.n-1 {
			continue // a job of fewer ranges
		}
		lo, hi := bounds(j.total, w.index, j.n)
		purego.SyscallN(j.fn, j.args, uintptr(lo), uintptr(hi))
		if j.pending.Add(-1) == 0 && j.waiting.CompareAndSwap(true, false) {
			p.done <- struct{}{}
		}
	}
}

// next waits for a job other than seen, polling for p.spin and then
// sleeping until a dispatcher wakes the worker, and returns it.
func (p *pool) next(w *worker, seen *job) *job {
	deadline := time.Now().Add(p.spin)
	for i := 0; ; i++ {
		if j := p.job.Load(); j != seen {
			return j
		}
		if i%256 != 255 || time.Now().Before(deadline) {
			continue
		}
		w.sleeping.Store(true)
		if j := p.job.Load(); j != seen {
			if !w.sleeping.CompareAndSwap(true, false) {
				<-w.wake // a dispatcher cleared it and sent
			}
			return j
		}
		<-w.wake
		deadline = time.Now().Add(p.spin)
	}
}
