package materialize

import (
	"reflect"
	"testing"
)

// TestDecodeFirstMatchesEncodingJSON: the fast parser gives what
// encoding/json gives — the value, what follows it, or the same error.
func TestDecodeFirstMatchesEncodingJSON(t *testing.T) {
	inputs := []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}`,
		` {"a": [1, -2.5e+3, 0, 1E2, true, false, null, "s", {}, []]} `,
		`{"a":1,"a":2}`,
		`{"esc":"a\"b\\c\u00e9\ud83d\ude00\n"}`,
		"{\"utf8\":\"h\u00e9llo \u2028\"}",
		"{\"bad\":\"\xff\xfe\"}",
		`[1,2,3] trailing`,
		`123abc`,
		`01`,
		`truex`,
		`"just a string"`,
		`{"n":-0.0}`,
		``, ` `, `{`, `{"a"}`, `{"a":}`, `[1,]`, `{"a":1,}`, `-`, `1.`, `1e`, `tru`, `"unterminated`,
		"{\"ctl\":\"a\x01b\"}", `{"a":truex}`, `[01]`, `{"a" :  [ 1 , 2 ] , "b" : { } }`, `nul`, `{'a':1}`,
	}
	for _, in := range inputs {
		want, wantRest, wantErr := decodeFirstStd([]byte(in))
		got, gotRest, gotErr := decodeFirst([]byte(in))
		if len(in) == 0 {
			if got != nil || gotRest != nil || gotErr != nil {
				t.Errorf("%q: got %v, %q, %v; want nothing", in, got, gotRest, gotErr)
			}
			continue
		}
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Errorf("%q: error %v, want %v", in, gotErr, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) || string(gotRest) != string(wantRest) {
			t.Errorf("%q: got %#v rest %q, want %#v rest %q", in, got, gotRest, want, wantRest)
		}
	}
}

// FuzzDecodeFirst compares the fast parser with encoding/json on any
// input (go test -fuzz FuzzDecodeFirst ./materialize).
func FuzzDecodeFirst(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",{"c":null}]}`, `"\u00e9"`, `[1e5,-0.1]`, "\"\xff\"", `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		want, wantRest, wantErr := decodeFirstStd(in)
		got, gotRest, gotErr := decodeFirst(in)
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Fatalf("%q: error %v, want %v", in, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) || string(gotRest) != string(wantRest) {
			t.Fatalf("%q: got %#v rest %q, want %#v rest %q", in, got, gotRest, want, wantRest)
		}
	})
}
