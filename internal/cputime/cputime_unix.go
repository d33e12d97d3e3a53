//go:build unix

// Package cputime reads the CPU time the process has used, so benchmarks
// can report CPU per operation: on a machine whose cores other work
// shares, a steadier figure than wall time.
package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user and system) the process has used so
// far, or -1 when it cannot be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
