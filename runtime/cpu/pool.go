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

// job is one kernel launch: fn(args, lo, hi) over [0, total) in n
// contiguous ranges, range w for worker w < n−1 and the last for the
// dispatcher. Each range is cut into pieces that its owner runs in order
// and that the others take once their own are done, so that a
// participant descheduled by other work on the machine delays the kernel
// by one piece, not by its whole range. It does not change once posted
// (but for its atomic counters).
type job struct {
	fn, args uintptr
	total    int64
	n        int
	// pieces is how many pieces each range is cut into.
	pieces int64
	// claimed[w] counts the pieces of range w handed out so far.
	claimed []paddedCount
	// left counts the pieces not finished; waiting is set while the
	// dispatcher sleeps on the pool's done for them.
	left    atomic.Int64
	waiting atomic.Bool
}

// maxPieces is the most pieces a range is cut into.
const maxPieces = 8

// paddedCount is a counter alone in its cache line, so that
// participants claiming pieces of different ranges do not contend.
type paddedCount struct {
	atomic.Int64
	_ [56]byte
}

// newJob returns the job of fn over [0, total) in n ranges of pieces
// pieces each.
func newJob(fn, args uintptr, total int64, n, pieces int) *job {
	j := &job{fn: fn, args: args, total: total, n: n, pieces: int64(pieces), claimed: make([]paddedCount, n)}
	j.left.Store(int64(n) * j.pieces)
	return j
}

// work runs pieces of j for participant w (the dispatcher is n−1): its
// own range's in order, then those left of the others, and reports
// whether it finished the job's last piece.
func (j *job) work(w int) (last bool) {
	for d := range j.n {
		r := (w + d) % j.n
		lo, hi := bounds(j.total, r, j.n)
		for {
			c := j.claimed[r].Add(1) - 1
			if c >= j.pieces {
				break
			}
			plo, phi := lo+(hi-lo)*c/j.pieces, lo+(hi-lo)*(c+1)/j.pieces
			if plo < phi {
				purego.SyscallN(j.fn, j.args, uintptr(plo), uintptr(phi))
			}
			if j.left.Add(-1) == 0 {
				last = true
			}
		}
	}
	return last
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
// workers, the last on the calling goroutine, each range cut into pieces
// (1 to maxPieces) that whoever is free takes once the range's owner is
// behind (see job). It reports false, having run nothing, when the pool
// is too small or another dispatch holds it.
func (p *pool) run(fn, args uintptr, total int64, n, pieces int) bool {
	if n-1 > len(p.workers) || !p.busy.TryLock() {
		return false
	}
	defer p.busy.Unlock()
	j := newJob(fn, args, total, n, min(max(pieces, 1), maxPieces))
	p.job.Store(j)
	for _, w := range p.workers[:n-1] {
		if w.sleeping.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	if !j.work(n - 1) {
		p.await(j)
	}
	return true
}

// await returns when every piece of j is finished.
func (p *pool) await(j *job) {
	deadline := time.Now().Add(p.spin)
	for i := 0; j.left.Load() > 0; i++ {
		if i%256 == 255 && time.Now().After(deadline) {
			j.waiting.Store(true)
			if j.left.Load() == 0 && j.waiting.CompareAndSwap(true, false) {
				return
			}
			<-p.done // the participant that finished last cleared waiting and sent
			return
		}
	}
}

// serve is a worker's loop: it waits for each job after the last it saw
// and works on it if the job has a range for it (pieces of a job that
// has ended are all claimed: a late worker finds nothing to do).
func (p *pool) serve(w *worker) {
	var seen *job
	for {
		j := p.next(w, seen)
		seen = j
		if w.index >= j.n-1 {
			continue // a job of fewer ranges
		}
		if j.work(w.index) && j.waiting.CompareAndSwap(true, false) {
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
