//go:build !linux

package truth

import "syscall"

// childAttr: elsewhere a child outlives a test binary that dies without
// cleaning up.
func childAttr() *syscall.SysProcAttr { return nil }
