//go:build !unix

package sqlite

import (
	"io/fs"
	"os"
)

// canWrite reports whether this process may write the file path. Without
// access(2), it checks the file's read-only attribute; a folder is taken
// as writable.
func canWrite(path string, dir bool) error {
	if dir {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o200 == 0 {
		return fs.ErrPermission
	}
	return nil
}
