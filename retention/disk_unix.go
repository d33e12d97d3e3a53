//go:build unix

package retention

import "golang.org/x/sys/unix"

// diskFree returns the bytes available to this process on the file system
// holding path.
func diskFree(path string) (int64, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return 0, err
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}
