// Package reread keeps what a program made of some files, made again when
// one of them changes: a token file an operator edits, a certificate
// cert-manager renews in a Secret volume, a ServiceAccount token the
// kubelet rotates. A change is a new modification time or size (a Secret
// volume's update swaps a symlink, which os.Stat follows).
package reread

import (
	"os"
	"sync"
	"time"
)

// Files is a value made of files. It is safe for concurrent use.
type Files[T any] struct {
	paths []string
	make  func() (T, error)

	mu     sync.Mutex
	stamps []stamp
	val    T
	ok     bool
}

// stamp tells whether a file changed.
type stamp struct {
	mod  time.Time
	size int64
}

// New returns the value make makes of the files at paths, made at the
// first Get and again whenever one of them changed.
func New[T any](make func() (T, error), paths ...string) *Files[T] {
	return &Files[T]{paths: paths, make: make}
}

// Get returns the value, made again first when a file changed since it
// was last made (the files are stat'ed before they are read, so a change
// while they are read is seen at the next Get). When a file cannot be read or the value cannot be made,
// it returns the error with the last value made (the zero T and false
// before the first), and tries again at the next Get.
func (f *Files[T]) Get() (T, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	stamps := make([]stamp, len(f.paths))
	changed := !f.ok
	for i, path := range f.paths {
		fi, err := os.Stat(path)
		if err != nil {
			return f.val, f.ok, err
		}
		stamps[i] = stamp{fi.ModTime(), fi.Size()}
		if f.ok && stamps[i] != f.stamps[i] {
			changed = true
		}
	}
	if !changed {
		return f.val, true, nil
	}
	v, err := f.make()
	if err != nil {
		return f.val, f.ok, err
	}
	f.val, f.ok, f.stamps = v, true, stamps
	return v, true, nil
}
