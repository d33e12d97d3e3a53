//go:build !linux

package testenv

import "os/exec"

// Without a parent-death signal, children are stopped by Cleanup only.
func startChild(cmd *exec.Cmd) error { return cmd.Start() }
