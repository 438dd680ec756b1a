package cpu

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ebitengine/purego"
)

// TestPoolRunsEveryPointOnce: each job's [0, total) is run exactly once,
// over any number of ranges, whether the workers poll or sleep between
// jobs, also with several dispatchers at once (those that find the pool
// busy run nothing and say so).
func TestPoolRunsEveryPointOnce(t *testing.T) {
	// counts[job][i] is how often point i of job ran; the callback gets
	// the job's number as its argument word.
	var mu sync.Mutex
	var counts [][]atomic.Int32
	fn := purego.NewCallback(func(job, lo, hi uintptr) uintptr {
		mu.Lock()
		c := counts[job]
		mu.Unlock()
		for i := lo; i < hi; i++ {
			c[i].Add(1)
		}
		return 0
	})
	newJob := func(total int64) uintptr {
		mu.Lock()
		defer mu.Unlock()
		counts = append(counts, make([]atomic.Int32, total))
		return uintptr(len(counts) - 1)
	}
	for _, spin := range []time.Duration{0, 20 * time.Microsecond} {
		p := newPool(7, spin)
		var ran, refused atomic.Int32
		var wg sync.WaitGroup
		for d := range 3 { // dispatchers
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 150 {
					total := int64((j*37 + d*11) % 200)
					n := 2 + (j+d)%7
					job := newJob(total)
					if p.run(fn, job, total, n, 1+(j+2*d)%maxPieces) {
						ran.Add(1)
						continue
					}
					refused.Add(1)
					mu.Lock()
					for i := range counts[job] {
						counts[job][i].Add(1) // as the fallback would
					}
					mu.Unlock()
					if j%50 == 0 {
						time.Sleep(time.Duration(j) * time.Microsecond) // let the workers sleep
					}
				}
			}()
		}
		wg.Wait()
		if ran.Load() == 0 {
			t.Errorf("spin %v: the pool ran no job", spin)
		}
		if big := newJob(10); p.run(fn, big, 10, 9, 3) {
			t.Errorf("spin %v: a job of 9 ranges ran on 7 workers and the caller", spin)
		} else {
			for i := range counts[big] {
				counts[big][i].Add(1) // as the fallback would
			}
		}
		t.Logf("spin %v: %d jobs on the pool, %d refused", spin, ran.Load(), refused.Load())
	}
	for j, c := range counts {
		for i := range c {
			if n := c[i].Load(); n != 1 {
				t.Fatalf("job %d: point %d of %d ran %d times", j, i, len(c), n)
			}
		}
	}
}

// TestSpinTime: the workers poll for spinFor with more than one of them,
// not at all with one, and STRATA_CPU_SPIN overrides both; a value that
// is not a duration is an error naming it.
func TestSpinTime(t *testing.T) {
	for _, c := range []struct {
		env     string
		workers int
		want    time.Duration
		err     bool
	}{
		{"", 15, spinFor, false},
		{"", 1, 0, false},
		{"0", 15, 0, false},
		{"50us", 1, 50 * time.Microsecond, false},
		{"1ms", 15, time.Millisecond, false},
		{"fast", 15, spinFor, true},
		{"-3us", 15, spinFor, true},
	} {
		t.Setenv("STRATA_CPU_SPIN", c.env)
		got, err := spinTime(c.workers)
		if got != c.want || (err != nil) != c.err || err != nil && !strings.Contains(err.Error(), c.env) {
			t.Errorf("STRATA_CPU_SPIN=%q, %d workers: %v, %v; want %v (error: %v)", c.env, c.workers, got, err, c.want, c.err)
		}
	}
}

// TestPoolTakesOverAStalledRange: when a worker is held up (descheduled,
// here asleep in each piece it runs), the dispatcher, done with its own
// range, runs the pieces of the worker's range that are left, so that the
// job ends after about one of the worker's pieces, not all of them.
func TestPoolTakesOverAStalledRange(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dispatcher := int64(syscall.Gettid())
	const total, pieces, stall = 800, 8, 40 * time.Millisecond
	var byDispatcher, byWorker atomic.Int64
	var workerStarted atomic.Bool
	fn := purego.NewCallback(func(_, lo, hi uintptr) uintptr {
		if int64(syscall.Gettid()) != dispatcher {
			workerStarted.Store(true)
			time.Sleep(stall)
			byWorker.Add(int64(hi - lo))
			return 0
		}
		// The dispatcher's first piece waits for the worker to be in one.
		for wait := time.Now(); !workerStarted.Load() && time.Since(wait) < 5*time.Second; {
			runtime.Gosched()
		}
		byDispatcher.Add(int64(hi - lo))
		return 0
	})
	p := newPool(1, 0)
	start := time.Now()
	if !p.run(fn, 0, total, 2, pieces) {
		t.Fatal("the pool refused a job of 2 ranges with 1 worker")
	}
	took := time.Since(start)
	if got := byDispatcher.Load() + byWorker.Load(); got != total {
		t.Fatalf("%d points ran, want %d", got, total)
	}
	// Without taking over, the worker's 8 pieces take 8 stalls.
	if byWorker.Load() == 0 || took >= pieces*stall/2 || byDispatcher.Load() <= total/2 {
		t.Errorf("the job took %v; the dispatcher ran %d of %d points, the worker %d; want under %v, over half and some", took, byDispatcher.Load(), total, byWorker.Load(), pieces*stall/2)
	}
}
