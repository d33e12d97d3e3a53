package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/storage"
)

// TestQueryPlans pins the plan of every hot statement with EXPLAIN QUERY
// PLAN: each searches the indexes named here and scans no table whole,
// and every index of the schema is used by one of them, so that an index
// can neither go unused (bytes on disk and work at every Append for
// nothing) nor go missing (a scan where there was a seek) unnoticed.
func TestQueryPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	obj := storage.ObjectID{ClusterID: "c1", Namespace: "shop", Resource: "configmaps", Name: "a"}
	// Open baselines in two streams, so that the visibility filter is in
	// the statements.
	vis := visibility{bound: 100, open: []openStream{{streamID: "s1", minBegin: 5, ids: []string{"bl-1"}}}, rows: []int64{1}}
	streamQ := storage.Query{StreamID: "s1", Until: time.Unix(100, 0)}
	var streamRQ recordsQuery
	streamRQ.add("r.stream = ?", 1)
	streamRQ.index = "records_stream"
	streamRQ.timeBounds(streamQ, 1)
	aliveStream, _ := aliveQuery(storage.AliveQuery{At: time.Unix(100, 0), StreamID: "s1"}, vis, 1, aliveOfAnyStream, nil)
	aliveStreamNames, _ := aliveQuery(storage.AliveQuery{At: time.Unix(100, 0), StreamID: "s1"}, vis, 1, aliveOfStream, []string{"a", "b"})
	aliveNS, _ := aliveQuery(storage.AliveQuery{At: time.Unix(100, 0), ClusterID: "c1", Namespace: "shop", Resource: "configmaps"}, vis, 0, aliveOfStream, nil)
	history, _ := objectHistoryQuery(obj, storage.HistoryQuery{}, vis)
	historyPage, _ := objectHistoryQuery(obj, storage.HistoryQuery{Limit: 100, AfterSeq: 5}, vis)
	historySince, _ := objectHistoryQuery(obj, storage.HistoryQuery{Since: time.Unix(50, 0)}, vis)
	historySincePage, _ := objectHistoryQuery(obj, storage.HistoryQuery{Since: time.Unix(50, 0), Limit: 100}, vis)
	var journalRQ recordsQuery
	journalQ := storage.Query{AfterSeq: 5}
	if err := journalRQ.seqBounds(journalQ); err != nil {
		t.Fatal(err)
	}
	exclude, _ := vis.exclude("r", "", 0)
	for _, c := range []struct {
		name, query string
		want        []string
	}{
		{"LatestAt", latestAtQuery, []string{"r USING PRIMARY KEY (obj=? AND observed_at<?)", "objects_name", "scopes_name", "sqlite_autoindex_clusters_1", "records_type_seq"}},
		{"LatestAt with open baselines", fmt.Sprintf(recordSelect, "b.data") + latestAtHead + ` AND ` + exclude + latestAtTail,
			[]string{"r USING PRIMARY KEY (obj=? AND observed_at<?)", "sqlite_autoindex_baselines_1"}},
		{"LatestAt without the timelines", latestAtSelfContained, []string{"r USING PRIMARY KEY (obj=? AND observed_at<?)", "records_marker"}},
		{"Records of a stream until a time", streamRQ.text(streamQ), []string{"records_stream", "records_stream_time"}},
		{"Get", fmt.Sprintf(recordSelect, "b.data") + ` FROM records r LEFT JOIN objects o ON o.id = r.obj` + recordJoins + ` WHERE r.id_key = ? AND r.event_id = ?`,
			[]string{"records_id"}},
		// An object's records and bodies, side by side in the tables.
		{"ObjectHistory", history, []string{"r USING PRIMARY KEY (obj=?)", "b USING PRIMARY KEY (obj=? AND id=?)", "objects_name"}},
		{"ObjectHistory with a limit", historyPage, []string{"x USING PRIMARY KEY (obj=?)", "r USING PRIMARY KEY (obj=? AND observed_at=? AND seq=?)",
			"b USING PRIMARY KEY (obj=? AND id=?)", "objects_name"}},
		{"ObjectHistory since a time", historySince, []string{"r USING PRIMARY KEY (obj=? AND observed_at>?)", "b USING PRIMARY KEY (obj=? AND id=?)", "objects_name"}},
		{"ObjectHistory since a time, with a limit", historySincePage, []string{"x USING PRIMARY KEY (obj=? AND observed_at>?)",
			"r USING PRIMARY KEY (obj=? AND observed_at=? AND seq=?)", "objects_name"}},
		{"Records of the journal after a seq", journalRQ.text(journalQ), []string{"records_seq"}},
		// A stream's records object by object, pages read in order.
		{"RecordsByObject: the rest of an object", byObjectRest("b.data", " AND r.type IN (1)"),
			[]string{"r USING PRIMARY KEY (obj=? AND (observed_at,seq)>(?,?))", "b USING PRIMARY KEY (obj=? AND id=?)"}},
		{"RecordsByObject: the objects after", byObjectNext("b.data", " AND r.type IN (1)", false),
			[]string{"so USING PRIMARY KEY (stream=? AND obj>?)", "r USING PRIMARY KEY (obj=?)", "b USING PRIMARY KEY (obj=? AND id=?)"}},
		{"RecordsByObject: the objects after, in a part", byObjectNext("b.data", " AND r.type IN (1)", true),
			[]string{"so USING PRIMARY KEY (stream=? AND obj>? AND obj<?)", "r USING PRIMARY KEY (obj=?)", "b USING PRIMARY KEY (obj=? AND id=?)"}},
		// ScanByObject: a chunk's names, bodies, then records, each table
		// walked in the order of its key.
		{"ScanByObject: names", scanNamesQuery, []string{"so USING PRIMARY KEY (stream=? AND obj>? AND obj<?)", "o USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"ScanByObject: bodies", fmt.Sprintf(scanBodiesQuery, "b.data"), []string{"so USING PRIMARY KEY (stream=? AND obj>? AND obj<?)", "b USING PRIMARY KEY (obj=?)"}},
		{"ScanByObject: records", fmt.Sprintf(scanRecordsQuery, " AND r.type IN (1)"), []string{"so USING PRIMARY KEY (stream=? AND obj>? AND obj<?)", "r USING PRIMARY KEY (obj=?)"}},
		{"keyframe", keyframeQuery, []string{"bodies_id"}},
		{"Correlations: any", correlationsProbe, []string{"records_target"}},
		// Each object's latest record: one seek for its key, one for the row.
		{"AliveAt of a stream", aliveStream, []string{"stream_objects", "x USING PRIMARY KEY (obj=? AND observed_at<?)", "r USING PRIMARY KEY (obj=? AND observed_at=? AND seq=?)"}},
		{"AliveAt of a stream's objects recorded by several streams", aliveStreamNames, []string{"stream_objects", "x USING PRIMARY KEY (obj=? AND observed_at<?)",
			"r USING PRIMARY KEY (obj=? AND observed_at=? AND seq=?)"}},
		{"AliveAt of a namespace", aliveNS, []string{"scopes_name", "objects_name", "x USING PRIMARY KEY (obj=? AND observed_at<?)",
			"r USING PRIMARY KEY (obj=? AND observed_at=? AND seq=?)"}},
		{"Correlations", fmt.Sprintf(recordSelect, "b.data") + ` FROM records r INDEXED BY records_target LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
			` WHERE r.target IN (?) ORDER BY r.seq`, []string{"records_target"}},
		{"timeline records", timelineRecords, []string{"records_type_seq"}},
		{"timeline key", timelineKeyQuery, []string{"records_type_seq"}},
		{"watermark", watermarkQuery, []string{"records_stream_time"}},
		{"stream row", `SELECT id FROM streams WHERE stream_id = ?`, []string{"sqlite_autoindex_streams_1"}},
		{"Append: event IDs", idLookup.text(8), []string{"records_id"}},
		{"Append: objects", objectLookup.text(8), []string{"objects_name"}},
		{"Append: latest body", latestBodyQuery, []string{"SEARCH records USING PRIMARY KEY (obj=?)"}},
		{"Append: cluster", nameSQL[0], []string{"sqlite_autoindex_clusters_1"}},
		{"Append: scope", nameSQL[2], []string{"scopes_name"}},
		{"Append: baseline", nameSQL[4], []string{"sqlite_autoindex_baselines_1"}},
		{"Compact: stream records", fmt.Sprintf(recordSelect, "NULL") + ` FROM records r INDEXED BY records_stream LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
			` WHERE r.stream = (SELECT id FROM streams WHERE stream_id = ?) ORDER BY r.seq`, []string{"records_stream"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := queryPlan(t, s, c.query)
			for _, idx := range c.want {
				// An index by its name, or a step of the plan by its text.
				named := strings.Contains(plan, " "+idx+" ") || strings.Contains(plan, " "+idx+"\n")
				if !named && (!strings.Contains(idx, " ") || !strings.Contains(plan, idx)) {
					t.Errorf("the plan does not use %s:\n%s", idx, plan)
				}
			}
			for _, line := range strings.Split(plan, "\n") {
				if fullScan(line) && !subqueryScan(plan, line) {
					t.Errorf("the plan scans a table whole (%s):\n%s", strings.TrimSpace(line), plan)
				}
			}
		})
	}
	// ObjectHistory sorts no rows, bodies and all, in a temporary B-tree;
	// with a limit, its subquery sorts the seqs of the rows (whose loop,
	// SCAN h, comes after).
	for _, q := range []string{history, historyPage, historySince, historySincePage} {
		plan := queryPlan(t, s, q)
		if strings.Contains(plan[strings.LastIndex(plan, "SCAN h ")+1:], "TEMP B-TREE") {
			t.Errorf("ObjectHistory sorts its rows:\n%s", plan)
		}
	}
	// RecordsByObject and ScanByObject sort nothing: the keys are the
	// order.
	for _, q := range []string{byObjectRest("b.data", ""), byObjectNext("b.data", "", false), byObjectNext("b.data", "", true),
		fmt.Sprintf(scanBodiesQuery, "b.data"), fmt.Sprintf(scanRecordsQuery, "")} {
		if plan := queryPlan(t, s, q); strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("RecordsByObject or ScanByObject sorts its rows:\n%s", plan)
		}
	}
	// Every index is in the plans above.
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var unused []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(usedIndexes, name) {
			unused = append(unused, name)
		}
	}
	if len(unused) > 0 {
		t.Errorf("no hot statement uses the indexes %v: drop them or pin the statement that needs them", unused)
	}
}

// usedIndexes are the indexes the plans of TestQueryPlans name, and those
// only constraints need: the UNIQUE constraint of scopes and objects is
// their name index, the marker index is records_marker.
var usedIndexes = []string{"records_seq", "bodies_id", "records_id", "records_stream", "records_stream_time", "records_marker", "records_type_seq",
	"records_target", "objects_name", "scopes_name", "sqlite_autoindex_clusters_1", "sqlite_autoindex_baselines_1",
	"sqlite_autoindex_streams_1", "sqlite_autoindex_stream_objects_1"}

// queryPlan returns the EXPLAIN QUERY PLAN of a statement, a line per
// step, with placeholders bound to NULL.
func queryPlan(t *testing.T, s *Store, query string) string {
	t.Helper()
	args := make([]any, strings.Count(query, "?"))
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + " \n")
	}
	return b.String()
}

// fullScan reports whether a plan step reads a whole table (a SCAN
// without an index) of the journal.
// subqueryScan tells whether a SCAN step of plan reads the rows of a
// subquery (a co-routine or a materialized one), not a table.
func subqueryScan(plan, step string) bool {
	name, ok := strings.CutPrefix(strings.TrimSpace(step), "SCAN ")
	if !ok {
		return false
	}
	for _, line := range strings.Split(plan, "\n") {
		if line = strings.TrimSpace(line); line == "CO-ROUTINE "+name || line == "MATERIALIZE "+name {
			return true
		}
	}
	return false
}

func fullScan(step string) bool {
	step = strings.TrimSpace(step)
	if !strings.HasPrefix(step, "SCAN ") || strings.Contains(step, "INDEX") {
		return false
	}
	// Constant rows, VALUES lists and the list of an IN are not tables.
	return !strings.Contains(step, "CONSTANT ROW") && !strings.Contains(step, "VALUES") && !strings.Contains(step, "LIST SUBQUERY")
}
