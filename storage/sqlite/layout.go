package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// A layout is what a journal's tables and indexes look like: per table its
// columns, per index its table and columns. The schema version in a file's
// header says which layout it must have; Open checks that it has it before
// it migrates or writes anything, because a file of another layout with
// the same version number (written by a development build from before the
// format was pinned, or altered by hand) would be migrated, stamped with
// the current version and then fail at its first statement.
type layout struct {
	// columns holds "name type notnull pk" per column, in column order.
	columns map[string][]string
	// indexes holds "table(col,col)" per index name.
	indexes map[string]string
}

const (
	layoutColumnsQuery = `SELECT m.name, p.name, p.type, p."notnull", p.pk FROM sqlite_master m JOIN pragma_table_info(m.name) p` +
		` WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`
	layoutIndexesQuery = `SELECT m.name, m.tbl_name, coalesce(p.name, '') FROM sqlite_master m JOIN pragma_index_info(m.name) p` +
		` WHERE m.type = 'index' ORDER BY m.name, p.seqno`
)

// readLayout reads the layout of the database db is connected to.
func readLayout(ctx context.Context, db *sql.DB) (layout, error) {
	l := layout{columns: map[string][]string{}, indexes: map[string]string{}}
	rows, err := db.QueryContext(ctx, layoutColumnsQuery)
	if err != nil {
		return l, err
	}
	for rows.Next() {
		var table, name, typ string
		var notNull, pk int
		if err := rows.Scan(&table, &name, &typ, &notNull, &pk); err != nil {
			rows.Close()
			return l, err
		}
		l.columns[table] = append(l.columns[table], fmt.Sprintf("%s %s %d %d", name, strings.ToUpper(typ), notNull, pk))
	}
	if err := rows.Close(); err != nil {
		return l, err
	}
	rows, err = db.QueryContext(ctx, layoutIndexesQuery)
	if err != nil {
		return l, err
	}
	cols := map[string][]string{}
	tables := map[string]string{}
	for rows.Next() {
		var index, table, col string
		if err := rows.Scan(&index, &table, &col); err != nil {
			rows.Close()
			return l, err
		}
		tables[index] = table
		cols[index] = append(cols[index], col)
	}
	if err := rows.Close(); err != nil {
		return l, err
	}
	for index, table := range tables {
		l.indexes[index] = table + "(" + strings.Join(cols[index], ",") + ")"
	}
	return l, nil
}

// diff returns what got lacks or has otherwise than l, the expected
// layout, in words ("" when got has l's layout). Indexes got has beyond
// l's are allowed: they change no answer.
func (l layout) diff(got layout) string {
	var out []string
	for _, table := range slices.Sorted(maps.Keys(l.columns)) {
		out = append(out, tableDiff(table, l.columns[table], got.columns[table])...)
	}
	for _, index := range slices.Sorted(maps.Keys(l.indexes)) {
		switch have, ok := got.indexes[index]; {
		case !ok:
			out = append(out, fmt.Sprintf("index %s is missing", index))
		case have != l.indexes[index]:
			out = append(out, fmt.Sprintf("index %s is on %s, want %s", index, have, l.indexes[index]))
		}
	}
	return strings.Join(out, "; ")
}

// tableDiff says how the columns of a table differ from those wanted.
func tableDiff(table string, want, have []string) []string {
	switch {
	case have == nil:
		return []string{fmt.Sprintf("table %s is missing", table)}
	case slices.Equal(want, have):
		return nil
	}
	name := func(col string) string { return strings.Fields(col)[0] }
	var out []string
	for _, col := range want {
		i := slices.IndexFunc(have, func(c string) bool { return name(c) == name(col) })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("table %s has no column %s", table, name(col)))
		case have[i] != col:
			out = append(out, fmt.Sprintf("column %s.%s is %q, want %q (name type notnull pk)", table, name(col), have[i], col))
		}
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("table %s has the columns %q, want %q", table, have, want))
	}
	return out
}

// layouts caches the layout of each schema version, built once by
// running its migrations on an empty database in memory.
var layouts struct {
	mu      sync.Mutex
	version map[int]layout
}

// layoutOf returns the layout a journal of schema version has.
func layoutOf(ctx context.Context, version int) (layout, error) {
	layouts.mu.Lock()
	defer layouts.mu.Unlock()
	if l, ok := layouts.version[version]; ok {
		return l, nil
	}
	db, err := sql.Open(driverName, "file:layout?mode=memory")
	if err != nil {
		return layout{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one database in memory
	for v := 0; v < version; v++ {
		if _, err := db.ExecContext(ctx, migrations[v]); err != nil {
			return layout{}, fmt.Errorf("schema %d to %d: %w", v, v+1, err)
		}
	}
	l, err := readLayout(ctx, db)
	if err != nil {
		return layout{}, err
	}
	if layouts.version == nil {
		layouts.version = map[int]layout{}
	}
	layouts.version[version] = l
	return l, nil
}

// checkLayout refuses a journal, read through db, whose tables and indexes
// are not those of its schema version.
func checkLayout(ctx context.Context, db *sql.DB, path string, version int) error {
	want, err := layoutOf(ctx, version)
	if err != nil {
		return fmt.Errorf("sqlite: the layout of schema version %d: %w", version, err)
	}
	got, err := readLayout(ctx, db)
	if err != nil {
		return &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion, Reason: "corrupt journal (schema unreadable)", Err: err}
	}
	if d := want.diff(got); d != "" {
		return &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion,
			Reason: fmt.Sprintf("schema version %d in its header but not the layout of that version (%s): a journal written by a "+
				"development build of krply from before the file format was pinned, or altered by hand, which this build cannot "+
				"migrate; read it with the build that wrote it, or record a new journal", version, d)}
	}
	return nil
}
