package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a process gets to exit after SIGTERM before it is
// killed. kube-apiserver normally needs about a second.
const stopGrace = 15 * time.Second

// process is one child process (etcd or kube-apiserver) whose output goes to
// a log file.
type process struct {
	name    string
	path    string
	args    []string
	logPath string

	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // the Wait result, valid after done is closed
}

func (p *process) start() error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: open %s log: %w", p.name, err)
	}
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339Nano), p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := startChild(cmd); err != nil {
		logFile.Close()
		return fmt.Errorf("testenv: start %s: %w", p.name, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return nil
}

// exited reports whether the process has already ended.
func (p *process) exited() bool {
	if p.done == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to exit (SIGTERM) and kills it (SIGKILL) when it has
// not exited within stopGrace. It is a no-op for a process that has exited.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(stopGrace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(lines int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	all := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}

// errExited is returned while waiting for a process that ended before it
// became ready.
var errExited = errors.New("process exited")

// exitError describes a process that ended during start-up, with its log.
func (p *process) exitError() error {
	return fmt.Errorf("testenv: %s exited during start-up (%v): %w; last log lines of %s:\n%s",
		p.name, p.err, errExited, p.logPath, p.logTail(30))
}

// portInUse reports whether the process's log says that a port it was given
// was taken in the meantime, which makes a start-up retry worthwhile.
func (p *process) portInUse() bool {
	data, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(data, []byte("address already in use"))
}
