package materialize

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/krply/krply/storage/storagetest"
)

var fastDecodeSeeds = []string{
	`{}`, ` {"a":1} `, `{"a":[]}`, `{"a":{}}`, `{"a":-0.5e+10,"b":0,"c":1E3,"d":-12}`,
	`{"s":"plain","u":"ünïcode","e":"a\"b\\c\/d\n\u00e9\ud83d\ude00","bad":"\ud800x"}`,
	`{"t":true,"f":false,"n":null,"l":[1,"x",[true,null],{"k":"v"}]}`,
	`{"dup":1,"dup":2}`, `{"a":1}{"b":2}`, `{"a":1} trailing`, "{\"inv\":\"\xff\xfe\"}",
	`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":tru}`, `{"a":nul}`, `{"a" 1}`, `{"a":1,}`, `[1,2]`, `"s"`, `12`,
	"{\"ctl\":\"a\x01b\"}", `{"a":"\x"}`, `{"a":"unterminated`, `{"a":[1,2`, `{"a":1e}`, `{"a":+1}`,
	`{"last-applied":"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}\n"}`,
}

// TestFastDecode: the fast decoder gives the tree and the rest
// encoding/json gives for every body it takes, and takes the bodies the
// API server writes (so that they do not fall back).
func TestFastDecode(t *testing.T) {
	for _, s := range fastDecodeSeeds {
		checkFastDecode(t, []byte(s))
	}
	for _, raw := range [][]byte{
		storagetest.ConfigMap("ns", "cm", "u1", "12", map[string]string{"a": "1", "b": "two"}),
		storagetest.Deployment("ns", "web", "u2", "13", 3, "shop:1.0"),
	} {
		if _, _, _, ok := fastDecode(raw); !ok {
			t.Errorf("the fast decoder does not take %s", raw)
		}
		checkFastDecode(t, raw)
	}
	deep := bytes.Repeat([]byte(`{"a":`), maxFastDepth+1)
	deep = append(append(deep, '1'), bytes.Repeat([]byte{'}'}, maxFastDepth+1)...)
	if _, _, _, ok := fastDecode(deep); ok {
		t.Errorf("the fast decoder took a body nested %d deep", maxFastDepth+1)
	}
	checkFastDecode(t, deep)
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range fastDecodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFastDecode)
}

func checkFastDecode(t *testing.T, raw []byte) {
	fv, frest, _, ok := fastDecode(raw)
	sv, srest, err := decodeStd(raw)
	if !ok {
		// decodeFirst falls back to encoding/json: nothing to compare.
		return
	}
	if err != nil {
		t.Fatalf("%q: the fast decoder took what encoding/json refuses (%v): %#v", raw, err, fv)
	}
	if !reflect.DeepEqual(fv, sv) {
		t.Fatalf("%q: fast %#v, encoding/json %#v", raw, fv, sv)
	}
	if !bytes.Equal(frest, srest) {
		t.Fatalf("%q: rest fast %q, encoding/json %q", raw, frest, srest)
	}
	// Scanning its members, checking or not, finds the members the
	// decoded object has, in order, the last of duplicates winning.
	for _, checked := range []bool{false, true} {
		d := fastDecoder{data: raw, checked: checked}
		d.space()
		fields, ok := d.members(1, nil, true)
		if !ok || d.pos != len(raw)-len(frest) {
			t.Fatalf("%q: members (checked %v) failed or ended at %d, not %d", raw, checked, d.pos, len(raw)-len(frest))
		}
		m := map[string]any{}
		for _, f := range fields {
			val := f.val.in(raw)
			v, err := decodeJSON(val)
			if err != nil && val[0] == '{' || err == nil && !bytes.Equal(val, bytes.TrimSpace(val)) {
				t.Fatalf("%q: member %q is %q (%v)", raw, f.keyIn(raw), val, err)
			}
			if err != nil {
				// Not an object: decode it inside one.
				v = mustDecode(t, `{"v":`+string(val)+`}`).(map[string]any)["v"]
			}
			m[string(f.keyIn(raw))] = v
		}
		if !reflect.DeepEqual(any(m), sv) {
			t.Fatalf("%q: members (checked %v) %#v, decoded %#v", raw, checked, m, sv)
		}
	}
	if got, rest, err := decodeFirst(raw); err != nil || !reflect.DeepEqual(got, sv) || !bytes.Equal(rest, srest) {
		t.Fatalf("%q: decodeFirst %#v %q %v", raw, got, rest, err)
	}
	// Interning, the table empty and then full of the body's strings,
	// gives the same tree.
	intern := map[string]string{}
	for range 2 {
		iv, irest, _, iok := fastDecodeInterning(raw, intern)
		if !iok || !reflect.DeepEqual(iv, sv) || !bytes.Equal(irest, srest) {
			t.Fatalf("%q: interning %#v %q %v", raw, iv, irest, iok)
		}
	}
}
