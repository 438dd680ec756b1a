package exec

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// backgroundNice is the nice value of a thread compiling the final JIT
// tier: the lowest priority, so that it takes only CPU time that a first
// call's work (other graphs' first-tier loads, passes and code
// generation, the first runs' launches) leaves idle.
const backgroundNice = 19

// inBackground lowers the priority of the calling goroutine's thread for
// the rest of the goroutine's life: it locks the goroutine to its thread
// and never unlocks it, so that the thread ends with the goroutine
// rather than going back to the scheduler at the low priority (raising
// it again may need a privilege the process lacks). The driver's JIT
// compiles on the calling thread, so its work runs at that priority.
// A thread whose priority cannot be lowered runs as it is.
func inBackground() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), backgroundNice)
}

// compileNice is the nice value of a ptxas process (LoadPolicy.PTXAS): a
// little below the process's threads, so that a first call's serial work
// (another graph's passes and code generation, the libraries' warm-ups)
// is not slowed by a full machine of ptxas processes, which take the
// rest of the CPU.
const compileNice = 5

// lowerPriority lowers the priority of process pid to compileNice; a
// process whose priority cannot be lowered runs as it is.
func lowerPriority(pid int) { _ = unix.Setpriority(unix.PRIO_PROCESS, pid, compileNice) }
