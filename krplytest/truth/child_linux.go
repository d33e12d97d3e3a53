package truth

import "syscall"

// childAttr makes the kernel kill a recording child when the test binary
// dies, so a panic or timeout leaves no Collector running.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
