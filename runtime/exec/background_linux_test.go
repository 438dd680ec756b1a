package exec

import (
	"os/exec"
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

// TestLowerPriority checks that lowerPriority gives a child process, as
// runPTXASFiles starts ptxas, nice compileNice, and leaves this process
// as it was.
func TestLowerPriority(t *testing.T) {
	own, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	if own <= 20-compileNice {
		t.Skipf("the test runs at getpriority %d (nice ≥ %d) already", own, compileNice)
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lowerPriority(cmd.Process.Pid)
	if got, err := unix.Getpriority(unix.PRIO_PROCESS, cmd.Process.Pid); err != nil || got != 20-compileNice {
		t.Errorf("child: getpriority %d (%v), want %d (nice %d)", got, err, 20-compileNice, compileNice)
	}
	if got, _ := unix.Getpriority(unix.PRIO_PROCESS, 0); got != own {
		t.Errorf("this process: getpriority %d, was %d", got, own)
	}
}
