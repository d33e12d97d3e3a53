package benchjournal

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/krply/krply/storage/storagetest"
)

// TestConfigMap: the bodies written straight are byte for byte those of
// storagetest.ConfigMap, which built the journals kept between runs; a
// difference would change what the benchmarks' recorders append (their
// deltas against the journal's versions).
func TestConfigMap(t *testing.T) {
	for _, obj := range []int{0, 1, 6, 7, 4242, Objects - 1} {
		for _, version := range []int{0, 1, 57, Versions - 1, Versions, 12345} {
			s := Stream(obj % Namespaces)
			name, rv := "cm-"+pad5(obj), strconv.Itoa(1000+obj*Versions+version)
			want := storagetest.ConfigMap(s.Namespace, name, "uid-"+name, rv, map[string]string{"version": strconv.Itoa(version), "owner": "team-" + strconv.Itoa(obj%7)})
			got := Object(obj, version, Start).Object
			if !bytes.Equal(got, want) {
				t.Fatalf("object %d version %d:\n got %s\nwant %s", obj, version, got, want)
			}
		}
	}
}

func pad5(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 5 {
		s = "0" + s
	}
	return s
}
