package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// export then import gives a journal that answers as the original does;
// importing again stores nothing; a cut file fails naming its line; --verify
// writes nothing; --server is refused.
func TestExportImport(t *testing.T) {
	src := shopJournal(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "shop.ndjson")
	if r := runPlugin(t, "--journal", src, "export", "-f", file); r.code != exitOK || !strings.Contains(r.stderr, "exported ") {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stdout := runPlugin(t, "--journal", src, "export")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.stdout != string(data) {
		t.Error("export to stdout and to --file differ")
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")

	dst := filepath.Join(dir, "copy.db")
	r := runPlugin(t, "--journal", dst, "import", file, "-o", "json")
	var res struct{ Records, Inserted, Duplicates int }
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != exitOK || err != nil || res.Records == 0 || res.Inserted != res.Records {
		t.Fatalf("import: exit %d, %+v, %v\n%s%s", r.code, res, err, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"history", "cm/settings", "-n", "shop"},
		{"snapshot", "-n", "shop", "--at", stamp(30), "-o", "json"},
		{"status", "-o", "json"},
	} {
		want := runPlugin(t, append([]string{"--journal", src}, args...)...)
		got := runPlugin(t, append([]string{"--journal", dst}, args...)...)
		if got.code != want.code || got.stdout != want.stdout {
			t.Errorf("%v on the imported journal:\n%s\nwant (the original's):\n%s", args, got.stdout, want.stdout)
		}
	}

	r = runPlugin(t, "--journal", dst, "import", file, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != exitOK || err != nil || res.Inserted != 0 || res.Duplicates != res.Records {
		t.Errorf("second import: exit %d, %+v, want nothing inserted\n%s", r.code, res, r.stderr)
	}

	cut := filepath.Join(dir, "cut.ndjson")
	if err := os.WriteFile(cut, []byte(strings.Join(lines[:len(lines)/2], "\n")+"\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runPlugin(t, "--journal", filepath.Join(dir, "cut.db"), "import", cut); r.code != exitError || !strings.Contains(r.stderr, "cut.ndjson") || !strings.Contains(r.stderr, "line ") {
		t.Errorf("import of a cut file: exit %d, want 1 naming the file and line\n%s", r.code, r.stderr)
	}
	fresh := filepath.Join(dir, "fresh.db")
	if r := runPlugin(t, "--journal", fresh, "import", "--verify", file); r.code != exitOK {
		t.Errorf("--verify: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("--verify created the journal: %v", err)
	}
	if r := runPlugin(t, "--server", "http://127.0.0.1:1", "export"); r.code != exitUsage || !strings.Contains(r.stderr, "--journal") {
		t.Errorf("export --server: exit %d, want 2 naming --journal\n%s", r.code, r.stderr)
	}
	if r := runPlugin(t, "--journal", filepath.Join(dir, "none.db"), "export"); r.code != exitError || !strings.Contains(r.stderr, "KRPLY_JOURNAL") {
		t.Errorf("export of a missing journal: exit %d, want 1\n%s", r.code, r.stderr)
	}
}
