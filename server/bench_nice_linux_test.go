package server_test

import (
	"os"
	"strconv"
	"syscall"
)

// niceThreads lowers the priority of every thread of the process by n:
// Linux sets a nice value per thread, and a thread started later takes
// its starter's.
func niceThreads(n int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err != nil {
			return err
		}
		// Getpriority returns 20 - nice.
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-prio+n); err != nil {
			return err
		}
	}
	return nil
}
