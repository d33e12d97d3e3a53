//go:build unix

package sqlite

import "syscall"

// canWrite reports whether this process may write the file path, or
// create files in the folder path (dir).
func canWrite(path string, dir bool) error {
	mode := uint32(0x2) // W_OK
	if dir {
		mode |= 0x1 // X_OK
	}
	return syscall.Access(path, mode)
}
