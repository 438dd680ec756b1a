package exec

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestInBackground checks that inBackground gives the calling
// goroutine's thread the lowest priority and leaves other goroutines'
// threads as they were. (Linux's getpriority system call answers 20 −
// nice: 1 for nice 19.)
func TestInBackground(t *testing.T) {
	prio := func() int {
		p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		if err != nil {
			t.Error(err)
		}
		return p
	}
	if prio() == 20-backgroundNice {
		t.Skipf("the test runs at nice %d already", backgroundNice)
	}
	done := make(chan int)
	go func() {
		inBackground()
		done <- prio()
	}()
	if got := <-done; got != 20-backgroundNice {
		t.Errorf("background thread: getpriority %d, want %d (nice %d)", got, 20-backgroundNice, backgroundNice)
	}
	// The niced thread ended with its goroutine: no other goroutine runs
	// on it afterwards.
	for range 50 {
		go func() { done <- prio() }()
		if got := <-done; got == 20-backgroundNice {
			t.Fatalf("a later goroutine ran at nice %d", backgroundNice)
		}
	}
}
