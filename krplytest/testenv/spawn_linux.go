package testenv

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// On Linux children get SIGKILL when the test binary dies (a panic, a
// `go test -timeout`, Ctrl-C), so no etcd or kube-apiserver outlives it.
// The parent-death signal fires when the *thread* that forked the child
// ends, so every child is forked from one goroutine locked for good to its
// own thread, which the Go runtime never retires.

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce     sync.Once
	spawnRequests chan spawnRequest
)

func startChild(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnRequests = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for req := range spawnRequests {
				req.done <- req.cmd.Start()
			}
		}()
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawnRequests <- req
	return <-req.done
}
