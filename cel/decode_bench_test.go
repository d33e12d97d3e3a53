package cel

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"
)

// aVersion is a ConfigMap as the API server sends it, with numbers of
// each kind.
var aVersion = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-00001","namespace":"bench","uid":"uid-00001","resourceVersion":"3","creationTimestamp":"2025-01-01T00:00:00Z","labels":{"app":"shop","tier":"backend"},"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:config.yaml":{},"f:version":{}}}}]},"data":{"version":"3","config.yaml":"listen: 8080\nworkers: 4\nlog: info\n"},"spec":{"replicas":3,"ratio":0.5,"big":12345678901234,"huge":1e30,"neg":-7,"list":[1,2.5,"x",null,true]}}`)

// BenchmarkDecode measures what each evaluation of a condition over a
// version starts with: the version decoded as unstructured.
func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(aVersion); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeNumbers: integers become int64 and other numbers float64, as
// in Kubernetes' unstructured objects, at any depth.
func TestDecodeNumbers(t *testing.T) {
	v, err := decode(aVersion)
	if err != nil {
		t.Fatal(err)
	}
	spec := v.(map[string]any)["spec"].(map[string]any)
	want := map[string]any{"replicas": int64(3), "ratio": 0.5, "big": int64(12345678901234), "huge": 1e30, "neg": int64(-7),
		"list": []any{int64(1), 2.5, "x", nil, true}}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("spec decoded as %#v, want %#v", spec, want)
	}
	if _, err := decode([]byte(`{"a":`)); err == nil {
		t.Error("decode of truncated JSON: no error")
	}
}

// BenchmarkMatch measures one evaluation of a condition over a version,
// its decoding included: each version has another data.version, so that
// no answer is one the Predicate kept.
func BenchmarkMatch(b *testing.B) {
	e, err := Compile(`object.data.version == "3"`)
	if err != nil {
		b.Fatal(err)
	}
	versions := make([][]byte, 1000)
	for i := range versions {
		versions[i] = bytes.Replace(aVersion, []byte(`"version":"3"`), fmt.Appendf(nil, `"version":"%d"`, i), 1)
	}
	ctx := context.Background()
	b.ReportAllocs()
	var p *Predicate
	i := 0
	for b.Loop() {
		if i%len(versions) == 0 {
			p = e.Predicate()
		}
		if _, err := p.Match(ctx, versions[i%len(versions)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkMatchKept measures Match of a version whose projection the
// Predicate evaluated before: the version scanned, the answer found.
func BenchmarkMatchKept(b *testing.B) {
	e, err := Compile(`object.data.version == "3"`)
	if err != nil {
		b.Fatal(err)
	}
	p := e.Predicate()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.Match(ctx, aVersion); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkDecodeProjected measures what an evaluation of
// `object.data.version == "3"` starts with: of the version, data.version
// decoded, the rest skipped (BenchmarkDecode decodes all of it).
func BenchmarkDecodeProjected(b *testing.B) {
	e, err := Compile(`object.data.version == "3"`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeProjected(aVersion, e.proj); err != nil {
			b.Fatal(err)
		}
	}
}
