package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	msqlite "modernc.org/sqlite"
)

// checkpointPages is how many pages the writer writes to the write-ahead
// log before the checkpointer copies them into the database file: SQLite's
// own default for wal_autocheckpoint.
const checkpointPages = 1000

// restartPages is the size of the log from which the checkpointer makes
// the writer start it over (see run): 12 MiB, so that with the pages
// written until the next checkpoint the log stays within about what
// SQLite's automatic checkpoint let it reach with the threshold of 4,000
// pages this package had (16 MiB and a batch).
const restartPages = 3 * checkpointPages

// checkpointer copies the write-ahead log into the database file (a WAL
// checkpoint) on a connection of its own, beside the writer, instead of
// within the commit of the write that filled the log, which SQLite's
// automatic checkpoint does (wal_autocheckpoint, turned off on the
// writer).
//
// A checkpoint of thousands of pages reads and writes each of them and
// syncs both files: tens of milliseconds during which the write that
// happened to cross the threshold, and the Collector behind it, waited.
// Beside the writer, the copy no longer lands on one unlucky append, so
// the appends' tail latency stays near their typical latency, and another
// core copies pages while the writer writes.
//
// The checkpoint is SQLite's PASSIVE one: it never waits for readers or
// writers and copies what no reader still needs; when another connection
// (another process) checkpoints at the time, this one is a no-op, asked
// again after the next thousand pages.
type checkpointer struct {
	db  *sql.DB
	log logr.Logger
	// writer is the Store's writeMu: the rest of a checkpoint is copied
	// holding it (see run).
	writer sync.Locker
	// pages counts the pages the writer wrote since the last checkpoint
	// was asked for; only the writer (under writeMu) touches it.
	pages int
	nudge chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// openCheckpointer opens the checkpointer's connection with the writer's
// synchronous setting (which decides whether a checkpoint syncs) and
// starts it.
func openCheckpointer(path, syncMode string, writer sync.Locker, log logr.Logger) (*checkpointer, error) {
	db, err := sql.Open(driverName, fileURL(path)+"?_pragma=synchronous("+syncMode+")")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s for checkpoints: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	c := &checkpointer{db: db, log: log, writer: writer, nudge: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

// wrote counts the pages the writer's connection wrote since it was last
// asked, and asks for a checkpoint once they reach checkpointPages. The
// writer calls it after each write transaction, holding writeMu.
func (c *checkpointer) wrote(ctx context.Context, w *sql.DB) {
	if c == nil {
		return
	}
	conn, err := w.Conn(context.WithoutCancel(ctx))
	if err != nil {
		return
	}
	defer conn.Close()
	_ = conn.Raw(func(dc any) error {
		st, ok := dc.(msqlite.DBStatus)
		if !ok {
			return nil
		}
		n, _, err := st.Status(msqlite.DBStatusCacheWrite, true)
		if err == nil {
			c.pages += n
		}
		return nil
	})
	if c.pages < checkpointPages {
		return
	}
	c.pages = 0
	select {
	case c.nudge <- struct{}{}:
	default: // one is asked for already
	}
}

// run checkpoints when asked. The checkpoint copies the log as the writer
// goes on writing. But the log starts over from its beginning (instead of
// growing) only at a write transaction that began with every page of it
// copied. A writer that pauses (a recorder between batches) finds it so
// after most checkpoints; one that never pauses (an import) has always
// begun its next transaction, or committed one, before a checkpoint beside
// it ends. So once the log holds restartPages, a second checkpoint copies
// beside the writer what it committed during the first, and a third waits
// for the writer's transaction to end and copies what it committed since,
// holding the writer back (a transaction's pages, and the two syncs): its
// next transaction starts the log over. Held without the second, the
// copy of what a long first checkpoint let pile up (readers slow it, and
// so does a machine busy with them) held the writer several times longer. Without it a writer
// that never pauses (an import) grows the log for its whole length, and
// every read and checkpoint pays for the longer log; doing it after every
// checkpoint would make the recorder's appends wait for it each time.
func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.nudge:
		}
		logPages, copied, err := c.checkpoint()
		if err == nil && logPages >= restartPages {
			// First once more beside the writer: it copies what the writer
			// committed during the checkpoint before, so that the one
			// holding the writer copies only the last commit's pages.
			if logPages, copied, err = c.checkpoint(); err == nil {
				c.writer.Lock()
				logPages, copied, err = c.checkpoint()
				c.writer.Unlock()
			}
		}
		if err != nil {
			// The commit that filled the log stands; the next thousand
			// pages ask again, and a disk that stays full fails the
			// writes themselves.
			c.log.Error(err, "WAL checkpoint failed; the write-ahead log grows until one succeeds")
			continue
		}
		c.log.V(2).Info("WAL checkpoint", "logPages", logPages, "copiedPages", copied)
	}
}

// checkpoint runs a PASSIVE checkpoint and returns the pages in the log
// and those copied into the file; none when another connection was
// checkpointing.
func (c *checkpointer) checkpoint() (logPages, copied int, err error) {
	var busy int
	if err := c.db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logPages, &copied); err != nil {
		return 0, 0, err
	}
	if busy != 0 {
		return 0, 0, nil
	}
	return logPages, copied, nil
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return c.db.Close()
}
