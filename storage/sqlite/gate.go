package sqlite

import (
	"context"
	"database/sql"
	"sync"

	"github.com/krply/krply/storage"
)

// changeGate tells readers whether the journal changed, by any
// connection of any process, since they last looked: SQLite's PRAGMA
// data_version, on a connection of its own, changes whenever another
// connection commits. What a Store keeps for its readers (the timelines'
// check, stream statuses) is tagged with the generation it was read in,
// and is current while the generation is: a reader then answers without
// a query. After a commit the generation moves and the next reader reads
// afresh.
type changeGate struct {
	mu   sync.Mutex
	db   *sql.DB   // one connection
	conn *sql.Conn // held for good: data_version is per connection
	stmt *sql.Stmt // PRAGMA data_version, prepared on conn
	// version is data_version as last read, gen the generation.
	version int64
	gen     uint64
}

// generation returns the journal's generation: the same as before only
// when no connection committed since. A connection lost (its data_version
// would start over) counts as a change. Generation 0, of a Store without a
// gate, is never current.
func (g *changeGate) generation(ctx context.Context) (uint64, error) {
	if g == nil {
		return 0, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		conn, err := g.db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		stmt, err := conn.PrepareContext(ctx, `PRAGMA data_version`)
		if err != nil {
			conn.Close()
			return 0, err
		}
		g.conn, g.stmt = conn, stmt
		g.gen++
	}
	var v int64
	if err := g.stmt.QueryRowContext(ctx).Scan(&v); err != nil {
		g.release()
		g.gen++
		return 0, err
	}
	if v != g.version {
		g.version = v
		g.gen++
	}
	return g.gen, nil
}

func (g *changeGate) close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release()
	if g.db == nil {
		return nil
	}
	return g.db.Close()
}

// release closes the held connection.
func (g *changeGate) release() {
	if g.conn != nil {
		g.stmt.Close()
		g.conn.Close()
		g.conn, g.stmt = nil, nil
	}
}

// statusCache holds stream statuses read in one generation.
type statusCache struct {
	mu       sync.Mutex
	gen      uint64
	byStream map[string]storage.StreamStatus
}

func (c *statusCache) get(gen uint64, streamID string) (storage.StreamStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.byStream[streamID]
	return st, ok && gen != 0 && c.gen == gen
}

func (c *statusCache) put(gen uint64, st storage.StreamStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == 0 || gen < c.gen {
		return // read in an older generation than what is kept
	}
	if c.gen != gen || c.byStream == nil {
		c.gen, c.byStream = gen, map[string]storage.StreamStatus{}
	}
	c.byStream[st.StreamID] = st
}
