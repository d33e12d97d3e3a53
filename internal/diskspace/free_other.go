//go:build !unix

package diskspace

import "errors"

// Free is not implemented on this platform.
func Free(string) (int64, error) {
	return 0, errors.New("free disk space is not known on this platform")
}
