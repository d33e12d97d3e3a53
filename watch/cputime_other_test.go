//go:build !unix

package watch

import "time"

// processCPU returns false: the CPU time is read on unix only.
func processCPU() (time.Duration, bool) { return 0, false }
