//go:build !linux

package exec

// inBackground does nothing where the thread's priority is not set
// (background_linux.go).
func inBackground() {}

// lowerPriority does nothing where the priority is not set
// (background_linux.go).
func lowerPriority(pid int) {}
