//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package sqlite_test

import "time"

// processCPU is not measured on this platform; the CPU metrics read 0.
func processCPU() time.Duration { return 0 }
