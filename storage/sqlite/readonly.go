package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/krply/krply/storage"
)

// noJournal is the error of a read-only Open of a missing or empty file.
func noJournal(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: open %s read-only: %w (a read-only open creates no journal)", path, err)
	}
	return &IncompatibleError{Path: path, SupportedVersion: SchemaVersion, Reason: "an empty file, not a journal (a read-only open creates none)"}
}

// checkWritable refuses, before SQLite touches anything, a journal that a
// writable Open could not write: SQLite would open a read-only file
// read-only without a word, and fail at the first write, or earlier with
// an obscure error when it cannot create the -wal and -shm files in the
// folder. It asks the operating system (access(2)) rather than opening the
// files: closing a descriptor of a file would drop the locks SQLite holds
// on it in this process.
func checkWritable(path string, isNew bool) error {
	dir := filepath.Dir(path)
	if isNew {
		if err := canWrite(dir, true); err != nil {
			return fmt.Errorf("sqlite: create %s: cannot create files in %s (%w): choose a folder this process may write, or fix its permissions", path, dir, err)
		}
		return nil
	}
	needDir := false
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if f != path && !exists(f) {
			needDir = true // SQLite creates it
			continue
		}
		if err := canWrite(f, false); err != nil {
			if f != path && errors.Is(err, fs.ErrNotExist) {
				needDir = true // its last user removed it meanwhile
				continue
			}
			return readOnlyFile(path, f, err)
		}
	}
	if needDir {
		if err := canWrite(dir, true); err != nil {
			return readOnlyFile(path, dir, err)
		}
	}
	return nil
}

func readOnlyFile(path, what string, err error) error {
	return &ReadOnlyError{Path: path, Cannot: what, Err: err}
}

// ReadOnlyError is returned when a writable Open is refused because this
// process cannot write the journal: Cannot names what it may not write
// (the file at Path, its -wal or -shm file, or its folder), Err is the
// operating system's answer. It wraps storage.ErrReadOnly and Err.
type ReadOnlyError struct {
	Path, Cannot string
	Err          error
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("sqlite: open %s: %v: cannot write %s (%v); open it read-only (WithReadOnly) or fix the permissions", e.Path, storage.ErrReadOnly, e.Cannot, e.Err)
}

// Unwrap returns storage.ErrReadOnly and Err.
func (e *ReadOnlyError) Unwrap() []error { return []error{storage.ErrReadOnly, e.Err} }

// cannotShare reports whether err is SQLite failing to open the
// write-ahead log's shared memory (the -shm file) of a read-only
// connection, for it may not create the file.
func cannotShare(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_READONLY_DIRECTORY || se.Code()&0xff == sqlite3.SQLITE_CANTOPEN
}

// walNeedsShm is the error of a read-only open that cannot read a
// write-ahead log.
func walNeedsShm(path string, err error) error {
	return fmt.Errorf("sqlite: open %s read-only: its write-ahead log %s-wal holds commits, which SQLite reads only through a %s-shm file, and it cannot create one in that folder (%v): make the folder writable, or open the journal once without WithReadOnly to fold the log into the file", path, path, path, err)
}

// fileWritable reports whether a writer may be expected to write the
// file at path: it has a write permission bit and this process may
// write it (an immutable file, chattr +i, refuses even root).
func fileWritable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Perm()&0o222 != 0 && canWrite(path, false) == nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// immutableFile is a journal a read-only Store reads as immutable
// (SQLite's immutable=1: without locks or shared memory). It notices when
// another process writes the file after all: a writer first writes a -wal
// file, and a checkpoint changes the file's size or time.
type immutableFile struct {
	path string
	size int64
	mod  time.Time
}

func watchImmutable(path string) (*immutableFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s read-only: %w", path, err)
	}
	return &immutableFile{path: path, size: fi.Size(), mod: fi.ModTime()}, nil
}

// check returns an error when the file changed since it was opened.
func (f *immutableFile) check() error {
	fi, err := os.Stat(f.path)
	if err == nil && fi.Size() == f.size && fi.ModTime().Equal(f.mod) && !nonEmpty(f.path+"-wal") {
		return nil
	}
	return fmt.Errorf("sqlite: %s: another process wrote the journal, which this store reads as immutable "+
		"(opened read-only in a folder where SQLite may not create %s-shm to share it with writers): open it again", f.path, f.path)
}
