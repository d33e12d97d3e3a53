package transfer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/krply/krply/krplytest/golden"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/transfer"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// The export format is pinned: the export of handJournal is
// testdata/v1.ndjson byte for byte, and that file imports into a journal
// that answers as handJournal does. A new format version adds its own
// file; the old ones stay and must keep importing.
func TestFormatV1(t *testing.T) {
	src := memory.New()
	handJournal(t, src)
	path := filepath.Join("testdata", "v1.ndjson")
	golden.Check(t, path, export(t, src), "the export format changed: a deliberate change is a new FormatVersion with its own file, and v1 files must still import")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := memory.New()
	if _, err := transfer.Import(context.Background(), bytes.NewReader(data), dst); err != nil {
		t.Fatal(err)
	}
	transfertest.SameAnswers(t, "the v1 file imported", transfertest.Answers(t, src), transfertest.Answers(t, dst))
}
