package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/storage/transfer"
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

// export verify (and import --verify, the same check) passes a good export
// with its counts and time range, and fails a cut file, a body with a
// flipped byte and a wrong trailer count, naming the file, the line and
// the problem in the format's words.
func TestExportVerify(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "shop.ndjson")
	if r := runPlugin(t, "--journal", shopJournal(t), "export", "-f", file); r.code != exitOK {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1]
	var want struct{ Records, Streams int }
	var end struct {
		End *struct{ Records, Streams int }
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.End == nil {
		t.Fatalf("the last line is not a trailer: %v\n%s", err, lines[len(lines)-1])
	}
	want = *end.End
	var first, last time.Time
	for i, l := range lines[1 : 1+want.Records] {
		var rec struct{ ObservedAt time.Time }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.ObservedAt.IsZero() {
			t.Fatalf("record line %d: %v\n%s", i+2, err, l)
		}
		if i == 0 || rec.ObservedAt.Before(first) {
			first = rec.ObservedAt
		}
		if rec.ObservedAt.After(last) {
			last = rec.ObservedAt
		}
	}

	r := runPlugin(t, "export", "verify", file)
	summary := fmt.Sprintf("%s: a valid krply export: %d records, %d streams, clusters c1\nrecords observed from %s to %s\n",
		file, want.Records, want.Streams, ts(first), ts(last))
	if r.code != exitOK || r.stdout != summary {
		t.Errorf("export verify: exit %d\n%s%s\nwant:\n%s", r.code, r.stdout, r.stderr, summary)
	}
	if again := runPlugin(t, "import", "--verify", file); again.code != exitOK || again.stdout != r.stdout {
		t.Errorf("import --verify: exit %d\n%s%s\nwant what export verify prints:\n%s", again.code, again.stdout, again.stderr, r.stdout)
	}
	var res struct{ Records, Streams int }
	if r := runPlugin(t, "export", "verify", "-o", "json", file); r.code != exitOK || json.Unmarshal([]byte(r.stdout), &res) != nil || res != want {
		t.Errorf("export verify -o json: exit %d, %+v, want %+v\n%s", r.code, res, want, r.stdout)
	}

	body := strings.Index(string(data), `"color":"blue"`)
	bodyLine := int64(strings.Count(string(data[:body]), "\n") + 1)
	n := int64(len(lines))
	for _, tc := range []struct {
		name string
		data string
		want []string
	}{
		{"cut.ndjson", string(data[:len(data)-len(lines[n-1])-10]), []string{fmt.Sprintf("line %d:", n-1), "cut short"}},
		{"flipped.ndjson", string(data[:body]) + `"color":"blud"` + string(data[body+len(`"color":"blue"`):]),
			[]string{fmt.Sprintf("line %d:", bodyLine), "does not match its objectHash"}},
		{"count.ndjson", strings.Join(lines[:n-1], "") + strings.Replace(lines[n-1], fmt.Sprintf(`"records":%d`, want.Records), fmt.Sprintf(`"records":%d`, want.Records+1), 1),
			[]string{fmt.Sprintf("line %d:", n), fmt.Sprintf("the trailer counts %d records", want.Records+1)}},
		{"newer.ndjson", strings.Replace(string(data), `"version":1`, `"version":2`, 1), []string{"line 1:", "format version 2 is newer"}},
		{"typed.ndjson", strings.Replace(string(data), `"version":1`, `"version":"1"`, 1), []string{"line 1:", `"krplyExport.version" is a string, want an integer`}},
		{"status.txt", "STREAM   RECORDS\n", []string{"line 1:", "not the header of a krply export"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(dir, tc.name)
			if err := os.WriteFile(bad, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.data == string(data) {
				t.Fatal("the corruption changed nothing")
			}
			r := runPlugin(t, "export", "verify", bad)
			if r.code != exitError || r.stdout != "" || !strings.HasPrefix(r.stderr, "kubectl krply: error: "+bad+" line ") {
				t.Errorf("exit %d, want 1 and the file and line first on stderr\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "Go struct") || strings.Contains(r.stderr, "transfer: ") {
				t.Errorf("stderr speaks Go, not the format:\n%s", r.stderr)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "verify", filepath.Join(dir, "none.ndjson")}, exitError, "FILE " + filepath.Join(dir, "none.ndjson") + ": no such file or directory"},
		{[]string{"export", "verify", file, file}, exitUsage, "reads one FILE (or stdin)"},
		{[]string{"--journal", shopJournal(t), "export", "-f", filepath.Join(dir, "no", "such", "dir.ndjson")}, exitError, "--file "},
	} {
		if r := runPlugin(t, tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s", tc.args, r.code, tc.code, tc.want, r.stderr)
		}
	}
}

// With --progress, export and import report on stderr, ending at 100%,
// while stdout holds only the export (or the import's result); without
// it, and stderr not a terminal, they report nothing.
func TestTransferProgress(t *testing.T) {
	src := shopJournal(t)
	r := runPlugin(t, "--journal", src, "export", "--progress")
	if r.code != exitOK {
		t.Fatalf("export --progress: exit %d\n%s", r.code, r.stderr)
	}
	res, err := transfer.Verify(context.Background(), strings.NewReader(r.stdout))
	if err != nil {
		t.Fatalf("stdout of export --progress is not a valid export: %v", err)
	}
	wantLine := regexp.MustCompile(fmt.Sprintf(`(?m)^export: %d records \(100%%\), \d+\.\d KiB, \d+ records/s, `, res.Records))
	if !wantLine.MatchString(r.stderr) {
		t.Errorf("export --progress: stderr has no final progress line for %d records:\n%s", res.Records, r.stderr)
	}
	if quiet := runPlugin(t, "--journal", src, "export"); strings.Contains(quiet.stderr, "records/s") || quiet.stdout != r.stdout {
		t.Errorf("export without --progress, stderr not a terminal, reports progress or writes another export:\n%s", quiet.stderr)
	}

	file := filepath.Join(t.TempDir(), "shop.ndjson")
	if err := os.WriteFile(file, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	imp := runPlugin(t, "--journal", filepath.Join(t.TempDir(), "copy.db"), "import", "--progress", "-o", "json", file)
	var got struct{ Records, Inserted int64 }
	if err := json.Unmarshal([]byte(imp.stdout), &got); imp.code != exitOK || err != nil || got.Inserted != res.Records {
		t.Fatalf("import --progress -o json: exit %d, %v, %+v, want %d inserted\n%s%s", imp.code, err, got, res.Records, imp.stdout, imp.stderr)
	}
	size := byteSize(int64(len(r.stdout)))
	if want := fmt.Sprintf("import: %d records, %s of %s (100%%), ", res.Records, size, size); !strings.Contains(imp.stderr, want) {
		t.Errorf("import --progress: stderr does not say %q:\n%s", want, imp.stderr)
	}
}

// The meter reports at most once a second, estimates the share done below
// 100% until the end, and prints sizes in binary units.
func TestMeter(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(now)
	var out strings.Builder
	m := newMeter(&out, "export", clk)
	m.totalRecords = 1000
	m.report(transfer.Progress{Records: 100, Bytes: 2048})
	clk.SetTime(now.Add(999 * time.Millisecond))
	m.report(transfer.Progress{Records: 200, Bytes: 4096})
	if out.Len() != 0 {
		t.Errorf("a report within the first second printed:\n%s", out.String())
	}
	clk.SetTime(now.Add(1250 * time.Millisecond))
	m.report(transfer.Progress{Records: 250, Bytes: 3 << 20})
	clk.SetTime(now.Add(1500 * time.Millisecond))
	m.report(transfer.Progress{Records: 300, Bytes: 4 << 20})
	clk.SetTime(now.Add(2500 * time.Millisecond))
	m.report(transfer.Progress{Records: 1200, Bytes: 5 << 20})
	clk.SetTime(now.Add(3 * time.Second))
	m.done(transfer.Progress{Records: 1200, Bytes: 5 << 20})
	want := "export: 250 of 1000 records (25%), 3.0 MiB, 200 records/s, 1.25s\n" +
		"export: 1200 of 1200 records (99%), 5.0 MiB, 480 records/s, 2.5s\n" +
		"export: 1200 records (100%), 5.0 MiB, 400 records/s, 3s\n"
	if out.String() != want {
		t.Errorf("meter printed:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	m = newMeter(&out, "import", clk)
	m.totalBytes = 10 << 30
	clk.SetTime(clk.Now().Add(2 * time.Second))
	m.report(transfer.Progress{Records: 10, Bytes: 512})
	clk.SetTime(clk.Now().Add(2 * time.Second))
	m.report(transfer.Progress{Records: 40, Bytes: 10 << 30}) // the whole input: done reports it
	m.done(transfer.Progress{Records: 40, Bytes: 10 << 30})
	if want := "import: 10 records, 512 B of 10.0 GiB (0%), 5 records/s, 2s\n" +
		"import: 40 records, 10.0 GiB of 10.0 GiB (100%), 10 records/s, 4s\n"; out.String() != want {
		t.Errorf("meter printed:\n%s\nwant:\n%s", out.String(), want)
	}
	if got := count(1, "stream") + ", " + count(0, "stream") + ", " + count(2, "cluster"); got != "1 stream, 0 streams, 2 clusters" {
		t.Errorf("count: %q", got)
	}
}

// SQLite → file → PostgreSQL → file: both exports are the same bytes,
// the PostgreSQL journal answers as the SQLite one does, a second import
// stores nothing, and export reports its progress from PostgreSQL's count.
func TestTransferPostgres(t *testing.T) {
	src := shopJournal(t)
	dsn := startPostgres(t)
	dir := t.TempDir()
	fromSQLite := filepath.Join(dir, "sqlite.ndjson")
	if r := runPlugin(t, "--journal", src, "export", "-f", fromSQLite); r.code != exitOK {
		t.Fatalf("export from SQLite: exit %d\n%s", r.code, r.stderr)
	}
	var res struct{ Records, Inserted, Duplicates int64 }
	r := runPlugin(t, "--journal", dsn, "import", fromSQLite, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != exitOK || err != nil || res.Records == 0 || res.Inserted != res.Records {
		t.Fatalf("import into PostgreSQL: exit %d, %+v, %v\n%s%s", r.code, res, err, r.stdout, r.stderr)
	}
	fromPostgres := filepath.Join(dir, "postgres.ndjson")
	r = runPlugin(t, "--journal", dsn, "export", "-f", fromPostgres, "--progress")
	if r.code != exitOK || !strings.Contains(r.stderr, fmt.Sprintf("export: %d records (100%%)", res.Records)) || strings.Contains(r.stderr, "s3cret") {
		t.Fatalf("export from PostgreSQL --progress: exit %d\n%s", r.code, r.stderr)
	}
	a, errA := os.ReadFile(fromSQLite)
	b, errB := os.ReadFile(fromPostgres)
	if errA != nil || errB != nil || string(a) != string(b) {
		t.Errorf("the export of the PostgreSQL journal differs from the SQLite export it was imported from (%v, %v)", errA, errB)
	}
	for _, args := range [][]string{
		{"history", "cm/settings", "-n", "shop"},
		{"snapshot", "-n", "shop", "--at", stamp(30), "-o", "json"},
		{"gaps"},
	} {
		want := runPlugin(t, append([]string{"--journal", src}, args...)...)
		got := runPlugin(t, append([]string{"--journal", dsn}, args...)...)
		if want.code != exitOK || want.stdout == "" {
			t.Fatalf("%v on the SQLite journal: exit %d\n%s", args, want.code, want.stderr)
		}
		if got.code != want.code || got.stdout != want.stdout {
			t.Errorf("%v on the PostgreSQL journal:\n%s%s\nwant (the SQLite journal's):\n%s", args, got.stdout, got.stderr, want.stdout)
		}
	}
	r = runPlugin(t, "--journal", dsn, "import", fromPostgres, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != exitOK || err != nil || res.Inserted != 0 || res.Duplicates != res.Records {
		t.Errorf("second import into PostgreSQL: exit %d, %+v, want nothing inserted\n%s", r.code, res, r.stderr)
	}
}
