package cpu

import (
	"strings"
	"sync"
	"sync/atomic"
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
					if p.run(fn, job, total, n) {
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
		if big := newJob(10); p.run(fn, big, 10, 9) {
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
