package sqlite

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/storagetest"
)

// The pieces of the file format that live in Go code rather than in the
// SQL schema: the deflate dictionary of keyframes, the delta instructions,
// the record and watch type codes, the time and ID encodings and the
// short keys of the meta column. Every journal ever written depends on
// them; these tests pin them to checked-in values.

const codecDir = formatDir + "/codec"

// dictionarySHA256 is the SHA-256 of format_dictionary.json, the preset
// dictionary of every keyframe in every journal.
const dictionarySHA256 = "213811cadc7c636c4f6254cd2eb19044f0136bb141ac0b31dd848ba044e0567a"

func TestFormatDictionary(t *testing.T) {
	sum := sha256.Sum256(dictionary)
	if got := hex.EncodeToString(sum[:]); got != dictionarySHA256 || len(dictionary) != 3582 {
		t.Fatalf("the deflate dictionary changed: %d bytes, SHA-256 %s; want 3582 bytes, %s.\n"+
			"Every keyframe of every journal is deflated with it: restore format_dictionary.json byte for byte "+
			"(no trailing newline). A new dictionary is a new schema version with a migration that re-encodes the keyframes.",
			len(dictionary), got, dictionarySHA256)
	}
}

// codecCase is a body and its checked-in encoding: a keyframe (base ""),
// or a delta against the body in base.
type codecCase struct {
	name, body, base, encoded string
}

var codecCases = []codecCase{
	// The first version of an object: deflated with the dictionary.
	{name: "keyframe of a Pod", body: "keyframe.json", encoded: "keyframe.deflate"},
	{name: "keyframe of a ConfigMap", body: "small.json", encoded: "small.deflate"},
	// A later version of the same object (a new resourceVersion, a
	// restart count): a delta against its keyframe.
	{name: "delta of a new version", body: "modified.json", base: "keyframe.json", encoded: "modified.delta"},
	// A new object alike an existing one (another Pod of the same
	// ReplicaSet): a delta against the other object's keyframe.
	{name: "delta of an alike object", body: "alike.json", base: "keyframe.json", encoded: "alike.delta"},
}

// TestFormatBodyCodec encodes fixed bodies and compares the result with
// the checked-in bytes, and decodes the checked-in bytes back to the
// bodies.
func TestFormatBodyCodec(t *testing.T) {
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(codecDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range codecCases {
		t.Run(tc.name, func(t *testing.T) {
			body := read(tc.body)
			path := filepath.Join(codecDir, tc.encoded)
			var encoded []byte
			var hint string
			if tc.base == "" {
				var err error
				if encoded, err = deflateKeyframe(body); err != nil {
					t.Fatal(err)
				}
				hint = "If decoding the golden bytes still passes, the format is intact and only Go's deflate encoder changed " +
					"(a new toolchain): rerun with -update. Otherwise the keyframe encoding changed and old journals cannot be read."
			} else {
				encoded = encodeDelta(read(tc.base), body)
				if len(encoded) > len(body)/8 {
					t.Errorf("delta of %d bytes for a %d-byte body: Append would store a keyframe, not a delta", len(encoded), len(body))
				}
				hint = "The delta encoder changed: old deltas must still decode (below); rerun with -update only if they do."
			}
			checkGoldenBytes(t, path, encoded, hint)

			stored := read(tc.encoded)
			var decoded []byte
			var err error
			if tc.base == "" {
				decoded, err = inflateKeyframe(stored, len(body))
			} else {
				decoded, err = applyDelta(read(tc.base), stored, len(body))
			}
			if err != nil {
				t.Fatalf("decode the checked-in %s: %v", tc.encoded, err)
			}
			if !bytes.Equal(decoded, body) {
				t.Fatalf("the checked-in %s decodes to %d bytes that differ from %s (%d bytes)", tc.encoded, len(decoded), tc.body, len(body))
			}
		})
	}
	// A keyframe is raw deflate (RFC 1951, no zlib or gzip header) with the
	// preset dictionary: any inflater given the dictionary reads it.
	stored := read("keyframe.deflate")
	out, err := io.ReadAll(flate.NewReaderDict(bytes.NewReader(stored), dictionary))
	if err != nil || !bytes.Equal(out, read("keyframe.json")) {
		t.Errorf("a plain inflater with the dictionary reads keyframe.deflate as %d bytes, %v; want keyframe.json", len(out), err)
	}
}

// TestFormatDeltaInstructions decodes hand-written deltas, which spell out
// the instruction format: a uvarint header h, then for h&1 == 1 a copy of
// h>>1 bytes of the base from the uvarint offset that follows, and for
// h&1 == 0 the h>>1 literal bytes that follow.
func TestFormatDeltaInstructions(t *testing.T) {
	base := []byte(strings.Repeat(".", 300) + "hello world")
	for _, tc := range []struct {
		name  string
		delta []byte
		want  string
	}{
		{"empty", nil, ""},
		{"copy", []byte{5<<1 | 1, 0}, "....."},
		{"insert", append([]byte{7 << 1}, ", krply"...), ", krply"},
		// Offset 300 takes two uvarint bytes: 0xAC 0x02.
		{"copy, insert, copy", append(append([]byte{5<<1 | 1, 0xAC, 0x02, 2 << 1}, "!!"...), 6<<1|1, 0xB1, 0x02), "hello!! world"},
		// A length of 200 takes two uvarint bytes too: (200<<1|1) = 401.
		{"long copy", []byte{0x91, 0x03, 0}, strings.Repeat(".", 200)},
	} {
		got, err := applyDelta(base, tc.delta, len(tc.want))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: applyDelta(% x) = %q, %v; want %q", tc.name, tc.delta, got, err, tc.want)
		}
	}
}

// TestFormatColumnCodes pins the integer codes and encodings kept in the
// records table's columns.
func TestFormatColumnCodes(t *testing.T) {
	wantTypes := map[event.RecordType]int{
		event.TypeEvent: 1, event.TypeBaseline: 2, event.TypeGap: 3, event.TypeCoverageChange: 4,
		event.TypeAuditCorrelation: 5, event.TypeSnapshot: 6, event.TypeCheckpoint: 7, event.TypePlan: 8,
	}
	if !maps.Equal(typeCodes, wantTypes) || codeEvent != 1 {
		t.Errorf("record type codes = %v (codeEvent %d), want %v", typeCodes, codeEvent, wantTypes)
	}
	wantWatch := map[event.WatchType]int{"": 0, event.Added: 1, event.Modified: 2, event.Deleted: 3, event.Bookmark: 4, event.Error: 5}
	if !maps.Equal(watchCodes, wantWatch) || codeDeleted != 3 {
		t.Errorf("watch type codes = %v (codeDeleted %d), want %v", watchCodes, codeDeleted, wantWatch)
	}

	// Times are Unix nanoseconds; the zero time is the smallest integer.
	paris := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		t    time.Time
		want int64
	}{
		{time.Time{}, math.MinInt64},
		{time.Date(2025, 1, 1, 0, 0, 0, 123456789, time.UTC), 1735689600123456789},
		{time.Date(2025, 1, 1, 1, 0, 0, 123456789, paris), 1735689600123456789},
		{time.Unix(0, 0), 0},
		{time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), -1_000_000_000},
	} {
		got := encodeTime(tc.t)
		if got != tc.want {
			t.Errorf("encodeTime(%v) = %d, want %d", tc.t, got, tc.want)
		}
		if back := decodeTime(got); !back.Equal(tc.t) || (!back.IsZero() && back.Location() != time.UTC) {
			t.Errorf("decodeTime(%d) = %v, want %v in UTC", got, back, tc.t)
		}
	}

	// Event IDs of 32 lowercase hex digits are 16-byte blobs, any other ID
	// is text; the index key is the first 8 bytes (big-endian, signed) of
	// the blob, or of the SHA-256 of the text.
	for _, tc := range []struct {
		id      string
		blob    bool
		wantKey int64
	}{
		{"00112233445566778899aabbccddeeff", true, 0x0011223344556677},
		{"ffeeddccbbaa99887766554433221100", true, -0x0011223344556678},
		{"00112233445566778899AABBCCDDEEFF", false, keyOfText("00112233445566778899AABBCCDDEEFF")},
		{"00112233445566778899aabbccddeeFF", false, keyOfText("00112233445566778899aabbccddeeFF")},
		{"00112233445566778899aabbccddeegg", false, keyOfText("00112233445566778899aabbccddeegg")},
		{"0011223344556677-899aabbccddeeff", false, keyOfText("0011223344556677-899aabbccddeeff")},
		{"plan-2025-01-01", false, keyOfText("plan-2025-01-01")},
	} {
		enc := encodeID(tc.id)
		if _, isBlob := enc.([]byte); isBlob != tc.blob {
			t.Errorf("encodeID(%q) = %T, want a blob: %t", tc.id, enc, tc.blob)
		}
		if got := keyOf(enc); got != tc.wantKey {
			t.Errorf("keyOf(encodeID(%q)) = %#x, want %#x", tc.id, got, tc.wantKey)
		}
		if back := decodeID(enc); back != tc.id {
			t.Errorf("decodeID(encodeID(%q)) = %q", tc.id, back)
		}
	}
	if got, want := keyOfText("plan-2025-01-01"), int64(0x4ed27c6d63d29507); got != want {
		t.Errorf("key of a text ID = %#x, want %#x (the first 8 bytes of its SHA-256)", got, want)
	}
}

// keyOfText is keyOf of a text ID, computed independently of keyOf.
func keyOfText(id string) int64 {
	sum := sha256.Sum256([]byte(id))
	var k uint64
	for _, b := range sum[:8] {
		k = k<<8 | uint64(b)
	}
	return int64(k)
}

// TestFormatRecordMeta pins the meta column: the binary form (written in
// hex here) for an object change with only a version, kind, UID and
// resourceVersion, and otherwise JSON with short keys for the fields of a
// record that have no column, and the payloads (event.Gap,
// event.Baseline, ...) in their own JSON encoding, whose field names are
// therefore part of the file format too. Every meta decodes back to what
// was encoded.
func TestFormatRecordMeta(t *testing.T) {
	var lines []string
	for _, rec := range metaRecords() {
		hasObj := rec.IsObjectChange()
		meta, err := metaOf(&rec, hasObj)
		if err != nil {
			t.Fatal(err)
		}
		shown := string(meta)
		if meta[0] == metaBinary {
			shown = "binary " + hex.EncodeToString(meta)
		}
		lines = append(lines, fmt.Sprintf("%s %s synthetic=%t object-row=%t\n%s\n", rec.Type, rec.WatchType, rec.Synthetic, hasObj, shown))
		var m recordMeta
		if err := decodeMeta(meta, &m); err != nil {
			t.Fatalf("decode %q: %v", meta, err)
		}
		back := event.Record{Resource: event.ResourceRef{Group: rec.Resource.Group, Resource: rec.Resource.Resource, Namespace: rec.Resource.Namespace, Name: rec.Resource.Name},
			ObjectHash: rec.ObjectHash, BaselineID: rec.BaselineID}
		m.applyTo(&back)
		back.BaselineID = rec.BaselineID // a column of its own
		if got, want := jsonOf(back), jsonOf(event.Record{Resource: rec.Resource, ObjectHash: rec.ObjectHash, BaselineID: rec.BaselineID,
			Gap: rec.Gap, Coverage: rec.Coverage, Baseline: rec.Baseline, Checkpoint: rec.Checkpoint, Saved: rec.Saved, Audit: rec.Audit, Inferred: rec.Inferred}); got != want {
			t.Errorf("meta %q decodes to\n %s, want\n %s", shown, got, want)
		}
	}
	checkGolden(t, filepath.Join(codecDir, "meta.txt"), []byte(strings.Join(lines, "")))
}

// TestBinaryMetaRoundTrip: the binary meta keeps every UID and
// resourceVersion exactly, the canonical ones in their short forms and
// the others as strings.
func TestBinaryMetaRoundTrip(t *testing.T) {
	for _, c := range []struct {
		uid, rv string
		flags   byte
	}{
		{"33222d37-95d6-4583-883b-c54f446055ea", "216", flagUUID | flagDecimalRV},
		{"33222D37-95D6-4583-883B-C54F446055EA", "0", flagDecimalRV},
		{"u-web", "007", 0},
		{"", "", 0},
		{"33222d37-95d6-4583-883b-c54f446055e", "18446744073709551616", 0},
		{"33222d37x95d6-4583-883b-c54f446055ea", "18446744073709551615", flagDecimalRV},
		{"33222d37-95d6-4583-883b-c54f446055eg", "-1", 0},
	} {
		m := recordMeta{Version: "v1", Kind: "ConfigMap", UID: c.uid, RV: c.rv}
		data := appendBinaryMeta(nil, &m)
		var got recordMeta
		if err := decodeMeta(data, &got); err != nil || got != m || data[1] != c.flags {
			t.Errorf("%+v: encoded %x (flags %d, want %d), decoded %+v, %v", m, data, data[1], c.flags, got, err)
		}
		for cut := range len(data) - 1 {
			if err := decodeMeta(data[:cut+1], &recordMeta{}); err == nil && cut+1 < len(data) {
				t.Errorf("%+v: %d of %d bytes decoded without an error", m, cut+1, len(data))
			}
		}
	}
}

// metaRecords returns a record of every type, with every payload field
// set, at fixed times.
func metaRecords() []event.Record {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	ref := storagetest.Ref(s, "Deployment", "shop", "web", "u-web", "42")
	body := storagetest.Deployment("shop", "web", "u-web", "42", 2, "web:1.0")
	ev := storagetest.Event(s, event.Modified, ref, body, t0.Add(time.Second))
	baseline := storagetest.Baseline(s, "bl-1", t0, "40", []storagetest.Item{{Ref: ref, Object: body}})
	baseline[2].Baseline.ClosesGap = "gap-id"
	gap := storagetest.Gap(s, t0.Add(-time.Minute), t0.Add(-time.Second), "410 Gone: too old resource version", "39")
	checkpoint := storagetest.Checkpoint(s, "43", true, t0.Add(2*time.Second))
	checkpoint.Checkpoint.InitialEventsEnd = true
	hashOnly := storagetest.Event(s, event.Modified, storagetest.Ref(s, "Deployment", "shop", "web", "u-web", "44"), body, t0.Add(5*time.Second))
	hashOnly.Object = nil // a record that names a body it does not carry
	return []event.Record{
		ev, hashOnly,
		baseline[0], baseline[1], baseline[2],
		gap,
		storagetest.CoverageChange(s, false, "403 Forbidden: deployments.apps is forbidden", 403, t0.Add(3*time.Second)),
		storagetest.CoverageChange(s, true, "access restored", 0, t0.Add(4*time.Second)),
		checkpoint,
		storagetest.InferredDelete(s, ev, t0.Add(-time.Minute), t0, "bl-1"),
		storagetest.Correlation(ev, "audit-1", "alice", t0.Add(time.Second)),
		storagetest.Document(event.TypeSnapshot, "c1", "snap-1", "before upgrade", t0, true, []byte(`{"objects":[]}`)),
		storagetest.Document(event.TypePlan, "c1", "plan-1", "rollback", t0, false, []byte(`{"steps":[]}`)),
	}
}

// TestRecordKindsFit: the type and watch type codes fit the bits
// recordKinds gives them (4 and 3), so that reads decode what Append
// wrote.
func TestRecordKindsFit(t *testing.T) {
	for typ, code := range typeCodes {
		if code < 0 || code >= 16 {
			t.Errorf("type %q has code %d: recordKinds holds 0 to 15", typ, code)
		}
	}
	for wt, code := range watchCodes {
		if code < 0 || code >= 8 {
			t.Errorf("watch type %q has code %d: recordKinds holds 0 to 7", wt, code)
		}
	}
}
