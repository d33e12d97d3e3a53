package reread_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krply/krply/internal/reread"
)

// A value is made once, again when a file changes (in content and
// time), and kept with the error when a file is gone or the value cannot
// be made, until it can be made again.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	write := func(path, s string, age time.Duration) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		// Distinct times, whatever the file system's precision.
		at := time.Now().Add(-age)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "one", time.Hour)
	write(b, "two", time.Hour)
	made := 0
	f := reread.New(func() (string, error) {
		made++
		ra, err := os.ReadFile(a)
		if err != nil {
			return "", err
		}
		rb, err := os.ReadFile(b)
		if err != nil {
			return "", err
		}
		if strings.Contains(string(rb), "bad") {
			return "", errors.New("bad")
		}
		return string(ra) + "+" + string(rb), nil
	}, a, b)
	want := func(v string, ok, failed bool, n int) {
		t.Helper()
		got, gotOK, err := f.Get()
		if got != v || gotOK != ok || (err != nil) != failed || made != n {
			t.Errorf("Get: %q %v %v after %d makes; want %q %v (error: %v) after %d", got, gotOK, err, made, v, ok, failed, n)
		}
	}
	want("one+two", true, false, 1)
	want("one+two", true, false, 1) // unchanged: not made again
	write(b, "three", 30*time.Minute)
	want("one+three", true, false, 2)
	write(b, "bad", 20*time.Minute)
	want("one+three", true, true, 3) // the last value, and the error
	want("one+three", true, true, 4) // tried again
	write(b, "four", 10*time.Minute)
	want("one+four", true, false, 5)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	want("one+four", true, true, 5) // gone: not made, the last value kept

	never := reread.New(func() (int, error) { return 1, nil }, filepath.Join(dir, "missing"))
	if v, ok, err := never.Get(); v != 0 || ok || err == nil {
		t.Errorf("Get of a missing file: %d %v %v; want 0, false and an error", v, ok, err)
	}
}

// Gets at once while the file changes each see a value made of one
// version of it.
func TestFilesConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := reread.New(func() (string, error) {
		raw, err := os.ReadFile(path)
		return string(raw), err
	}, path)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if v, ok, err := f.Get(); err != nil || !ok || v == "" || strings.Trim(v, "0123456789") != "" {
					t.Errorf("Get while the file changes: %q %v %v", v, ok, err)
					return
				}
			}
		}()
	}
	for i := range 50 {
		if err := os.WriteFile(path+".new", []byte(strings.Repeat("1", i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil { // as a volume's update: whole files
			t.Fatal(err)
		}
	}
	wg.Wait()
	if v, _, err := f.Get(); err != nil || v != strings.Repeat("1", 50) {
		t.Errorf("Get after the changes: %q %v; want the last version", v, err)
	}
}
