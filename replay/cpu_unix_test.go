//go:build unix

package replay_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process used so
// far, so benchmarks can report CPU per operation on a machine whose cores
// other work shares.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
