//go:build !linux

package server_test

import "fmt"

// niceThreads is Linux's only: elsewhere a process's priority is not set
// per thread.
func niceThreads(n int) error {
	return fmt.Errorf("KRPLY_BENCH_NICE=%d: lowering the priority of the benchmark's threads is done on Linux only", n)
}
