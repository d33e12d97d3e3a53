//go:build unix

package diskspace

import "golang.org/x/sys/unix"

// Free returns the bytes available to this process on the file system
// holding path.
func Free(path string) (int64, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return 0, err
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}
