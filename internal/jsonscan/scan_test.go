package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var seeds = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+10`, `1E3`, `true`, `false`, `null`, ` {"a" : [ 1 , 2 ] } `,
	`{"kind":"ConfigMap","metadata":{"name":"a\u0062c","annotations":{"k":"v"}},"data":{"x":"y\n"}}`,
	`{"s":"plain","u":"ünïcode","e":"a\"b\\c\/d\n\u00e9\ud83d\ude00","bad":"\ud800x"}`,
	`{"dup":1,"dup":2}`, "{\"inv\":\"\xff\xfe\"}", `{"a":"}\"{]","b":[{},[]],"c":"\\"}`,
	`{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, `{"a":tru}`, `{"a":nul}`, "{\"a\":\"\x01\"}",
	`{"a":1} x`, `{"a":1}{"b":2}`, `{"a":[1,]}`, `{"a":-}`, `{"a":"\u12"}`, `{`, `{"a":{"b":[`, ``, ` `,
	`{"a":1e}`, `{"a":+1}`, `[1,2`, `"unterminated`, `tr`, `-`, `{"a":1]`, `[1}`, `{1:2}`,
}

// FuzzScan checks the scanner against encoding/json: it accepts exactly
// the texts encoding/json.Valid accepts, refusing the others with an
// error (never a panic); on valid text it finds the values encoding/json
// decodes, the white space json.Compact removes, the ends SkipChecked
// finds, and, in every text cut short, an error at the cut.
func FuzzScan(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Valid(data)
		if (err == nil) != json.Valid(data) {
			t.Fatalf("Valid(%q) = %v, but encoding/json says valid = %v", data, err, json.Valid(data))
		}
		trimmed := bytes.TrimLeft(data, " \t\r\n")
		topErr := TopObject(data, func(key []byte, start, room int) (int, error) { return Skip(data, start, room) })
		if wantTop := err == nil && trimmed[0] == '{'; (topErr == nil) != wantTop {
			t.Fatalf("TopObject(%q) = %v, want an object: %v", data, topErr, wantTop)
		}
		// Every function refuses text anywhere in it with an error, not
		// a panic.
		for i := range min(len(data), 64) {
			_, _ = Skip(data, i, MaxDepth)
			_, _, _ = String(data, i)
			_, _ = Number(data, i)
			_, _ = SkipChecked(data, i)
		}
		if err != nil {
			var se *SyntaxError
			if errors.As(err, &se) && (se.Offset < 0 || se.Offset > len(data)) || !errors.As(err, &se) && !errors.Is(err, ErrDepth) {
				t.Fatalf("Valid(%q) = %#v, want a SyntaxError within the text or ErrDepth", data, err)
			}
			return
		}

		start := len(data) - len(trimmed)
		got, end := decode(t, data, start, MaxDepth)
		var want any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: scanned %#v, encoding/json decodes %#v", data, got, want)
		}
		if wantEnd := int(dec.InputOffset()); end != wantEnd {
			t.Fatalf("%q: the value ends at %d, encoding/json says %d", data, end, wantEnd)
		}

		skipEnd, spaced, err := SkipSpaced(data, start, MaxDepth)
		var compact bytes.Buffer
		if cerr := json.Compact(&compact, data[start:end]); err != nil || cerr != nil || skipEnd != end {
			t.Fatalf("%q: SkipSpaced = %d, %v; Compact %v; want %d", data, skipEnd, err, cerr, end)
		}
		if wantSpaced := compact.Len() != end-start; spaced != wantSpaced {
			t.Fatalf("%q: spaced = %v, but json.Compact says %v", data, spaced, wantSpaced)
		}
		if checkedEnd, ok := SkipChecked(data, start); !ok || checkedEnd != end {
			t.Fatalf("%q: SkipChecked = %d, %v; want %d", data, checkedEnd, ok, end)
		}

		// A value cut short is valid, or an error at the cut (what the
		// watch stream's framing relies on to read more).
		if end-start > 512 {
			return
		}
		for cut := start + 1; cut < end; cut++ {
			_, err := Skip(data[:cut], start, MaxDepth)
			var se *SyntaxError
			if err != nil && (!errors.As(err, &se) || se.Offset != cut) {
				t.Fatalf("%q cut at %d: %v, want an error at the cut", data, cut, err)
			}
		}
	})
}

// decode builds the value at data[i] as encoding/json decodes it with
// UseNumber, from what Object, Array, String, Number and Literal find.
func decode(t *testing.T, data []byte, i, room int) (any, int) {
	t.Helper()
	var v any
	var end int
	var err error
	switch c := data[i]; {
	case c == '{':
		m := map[string]any{}
		end, err = Object(data, i, room, func(key []byte, start, room int) (int, error) {
			v, end := decode(t, data, start, room)
			m[Unquote(key)] = v
			return end, nil
		})
		v = m
	case c == '[':
		l := []any{}
		end, err = Array(data, i, room, func(start, room int) (int, error) {
			v, end := decode(t, data, start, room)
			l = append(l, v)
			return end, nil
		})
		v = l
	case c == '"':
		var plain bool
		end, plain, err = String(data, i)
		if err == nil {
			s := Unquote(data[i:end])
			if plain && s != string(data[i+1:end-1]) {
				t.Fatalf("%q: plain string %q unquotes to %q", data, data[i:end], s)
			}
			v = s
		}
	case c == 't' || c == 'f' || c == 'n':
		lit := map[byte]string{'t': "true", 'f': "false", 'n': "null"}[c]
		end, err = Literal(data, i, lit)
		v = map[byte]any{'t': true, 'f': false, 'n': nil}[c]
	default:
		end, err = Number(data, i)
		if err == nil {
			v = json.Number(data[i:end])
		}
	}
	if err != nil {
		t.Fatalf("%q: the value at %d: %v, but the text is valid", data, i, err)
	}
	return v, end
}

// TestDepth: the scanner takes the nesting encoding/json takes, and no
// more, and a room of its own.
func TestDepth(t *testing.T) {
	nested := func(n int) []byte {
		return []byte(strings.Repeat(`[{"a":`, n/2) + strings.Repeat("[", n%2) + "1" + strings.Repeat("]", n%2) + strings.Repeat("}]", n/2))
	}
	for _, n := range []int{MaxDepth - 1, MaxDepth, MaxDepth + 1} {
		data := nested(n)
		err := Valid(data)
		if (err == nil) != json.Valid(data) || (err == nil) != (n <= MaxDepth) {
			t.Errorf("nested %d deep: Valid = %v, encoding/json says valid = %v", n, err, json.Valid(data))
		}
		if n > MaxDepth && !errors.Is(err, ErrDepth) {
			t.Errorf("nested %d deep: %v, want ErrDepth", n, err)
		}
	}
	for room := range 4 {
		for n := range 4 {
			_, err := Skip(nested(n), 0, room)
			if (err == nil) != (n <= room) {
				t.Errorf("nested %d deep, room %d: %v", n, room, err)
			}
		}
	}
}
