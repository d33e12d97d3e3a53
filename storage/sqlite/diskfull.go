package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"

	msqlite "modernc.org/sqlite"

	"github.com/krply/krply/internal/diskspace"
)

// ErrDiskFull is wrapped by the error of a write that failed because the
// file system holding the journal has no room left. Nothing of that write
// was committed; free space there (or move the journal) and write again —
// a Collector restarted on the journal resumes from its checkpoint.
var ErrDiskFull = errors.New("the disk holding the journal is full")

// lowDiskSpace is the free space under which a failed write of SQLite's is
// taken for a full disk: SQLite writes whole pages to the write-ahead log
// and the database file, and a file system keeps blocks of its own.
const lowDiskSpace int64 = 16 << 20

// freeSpace returns the bytes available to this process on the file
// system holding dir; tests replace it.
var freeSpace = diskspace.Free

// explainWrite returns err, wrapped with ErrDiskFull and the free space
// when SQLite failed to write (SQLITE_FULL, or an I/O error, which is how
// a write to the write-ahead log fails when the disk fills up) and the file
// system holding the journal has (almost) no room left. SQLite's own words
// for it, "disk I/O error (778)", say neither what happened nor what to
// do.
func (s *Store) explainWrite(err error) error {
	var se *msqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	const ioErr, full = 10, 13 // SQLITE_IOERR, SQLITE_FULL; extended codes keep them in the low byte
	if primary := se.Code() & 0xff; primary != ioErr && primary != full {
		return err
	}
	dir := filepath.Dir(s.path)
	free, ferr := freeSpace(dir)
	if ferr != nil || free >= lowDiskSpace {
		return err
	}
	return fmt.Errorf("sqlite: %w: %d bytes free on the file system of %s; free space there or move the journal (nothing of this write was committed): %w", ErrDiskFull, free, dir, err)
}
