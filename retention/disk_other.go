//go:build !unix

package retention

import "errors"

// diskFree is not implemented on this platform.
func diskFree(string) (int64, error) {
	return 0, errors.New("free disk space is not known on this platform")
}
