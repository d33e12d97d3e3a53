//go:build linux || darwin || freebsd || netbsd || openbsd

package sqlite_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used:
// on a machine shared with other work it is a steadier figure than wall
// time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
