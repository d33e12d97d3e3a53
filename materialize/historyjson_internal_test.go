package materialize

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestEncoderTime: the history encoder writes a time as
// time.Time.MarshalJSON does, and fails where it fails.
func TestEncoderTime(t *testing.T) {
	base := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	var times []time.Time
	for _, offset := range []int{0, 3600, -3600, 5*3600 + 30*60, 23*3600 + 59*60, 23*3600 + 59*60 + 59, 24 * 3600, -24 * 3600, 90, 100 * 3600} {
		loc := time.FixedZone("z", offset)
		for _, year := range []int{-1, 0, 1, 999, 2025, 9999, 10000} {
			times = append(times, time.Date(year, 12, 31, 23, 59, 59, 0, loc), base.AddDate(year-2025, 0, 0).In(loc))
		}
	}
	times = append(times, time.Time{}, base.Truncate(time.Second), base.Local())
	// One encoder for all, each time written twice, in turn with another:
	// what it remembers of the times before changes nothing.
	var e historyEncoder
	for i, tm := range times {
		for _, tm := range []time.Time{tm, times[(i+7)%len(times)], tm, base, tm} {
			want, wantErr := tm.MarshalJSON()
			e.err = nil
			got := e.time(nil, tm)
			if (wantErr != nil) != (e.err != nil) || wantErr == nil && !bytes.Equal(got, want) {
				t.Errorf("%v: wrote %s (%v), MarshalJSON %s (%v)", tm, got, e.err, want, wantErr)
			}
		}
	}
}

// TestEncoderStr: the history encoder writes a string as encoding/json
// does with HTML characters left as they are, for strings of every length
// around its eight-byte steps holding each byte value.
func TestEncoderStr(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var strs []string
	for c := range 256 {
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 24} {
			for _, at := range []int{0, n / 2, n - 1} {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				strs = append(strs, string(b))
			}
		}
	}
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x60))
			if r.IntN(50) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		strs = append(strs, string(b))
	}
	strs = append(strs, "", "ünïcödé", "😀 and <html> & 'quotes'", "\u2028\u2029", "\u2028")
	for _, s := range strs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		var e historyEncoder
		if got := e.str(nil, s); !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) || e.err != nil {
			t.Fatalf("%q: wrote %s (%v), encoding/json %s", s, got, e.err, want.Bytes())
		}
	}
}
