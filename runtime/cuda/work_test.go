package cuda

import (
	"errors"
	"testing"
)

// TestTimeQuiet checks TimeQuiet's retiming on a device with no work
// queued (WaitQuiet needs no driver then): a timing holds TimingLock, is
// made again while runs of the program's begin during it, up to
// maxRetimes times, and once only when undisturbed, refused or failed.
func TestTimeQuiet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perturbs  int // timings during which a run begins
		ok        bool
		err       error
		wantCalls int
	}{
		{"quiet", 0, true, nil, 1},
		{"perturbed once", 1, true, nil, 2},
		{"always perturbed", 100, true, nil, maxRetimes + 1},
		{"refused", 100, false, nil, 1},
		{"failed", 100, true, errors.New("boom"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Device{}
			calls := 0
			again, err := d.TimeQuiet(func() (bool, error) {
				if d.timing.TryLock() {
					d.timing.Unlock()
					t.Error("the timing runs without TimingLock")
				}
				if calls < tc.perturbs {
					// A run of the program's begins and ends meanwhile.
					d.work.mu.Lock()
					d.work.gen++
					d.work.mu.Unlock()
				}
				calls++
				return tc.ok, tc.err
			})
			if err != tc.err || calls != tc.wantCalls || again != tc.wantCalls-1 {
				t.Errorf("TimeQuiet: %d timings, %d again, error %v; want %d, %d, %v", calls, again, err, tc.wantCalls, tc.wantCalls-1, tc.err)
			}
		})
	}
}
