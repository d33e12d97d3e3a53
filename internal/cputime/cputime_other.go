//go:build !unix

// Package cputime reads the CPU time the process has used, so benchmarks
// can report CPU per operation: on a machine whose cores other work
// shares, a steadier figure than wall time.
package cputime

import "time"

// Process returns -1: the CPU time is not read on this platform.
func Process() time.Duration { return -1 }
