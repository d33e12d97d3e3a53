package sqlite

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"
)

// TestDeltaRoundTrip rebuilds bodies from deltas against bases with edits
// anywhere (start, end, middle, growth, shrink, unrelated content).
func TestDeltaRoundTrip(t *testing.T) {
	base, err := os.ReadFile("../../testdata/bodies/deployment.json")
	if err != nil {
		t.Fatal(err)
	}
	pod, err := os.ReadFile("../../testdata/bodies/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	targets := map[string][]byte{
		"same":      base,
		"empty":     {},
		"rv":        bytes.Replace(base, []byte(`"48213"`), []byte(`"48214"`), 1),
		"start":     append([]byte(`{"a":1,`), base[1:]...),
		"end":       append(append([]byte{}, base[:len(base)-1]...), []byte(`,"z":2}`)...),
		"shrink":    bytes.Replace(base, []byte(`"deployment.kubernetes.io/revision":"3",`), nil, 1),
		"unrelated": pod,
	}
	for i := range 50 {
		mutated := append([]byte{}, base...)
		for range 1 + rng.IntN(5) {
			mutated[rng.IntN(len(mutated))] = byte('a' + rng.IntN(26))
		}
		targets["random"+string(rune('A'+i))] = mutated
	}
	for name, target := range targets {
		delta := encodeDelta(base, target)
		got, err := applyDelta(base, delta, len(target))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, target) {
			t.Fatalf("%s: rebuilt body differs", name)
		}
		if name == "rv" && len(delta) > 32 {
			t.Errorf("a one-field change takes %d delta bytes, want a few", len(delta))
		}
	}
	if _, err := applyDelta(base, []byte{0x05, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F}, 2); err == nil {
		t.Error("a copy out of range was accepted")
	}
}

func TestKeyframeRoundTrip(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/bodies/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	data, err := deflateKeyframe(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > len(raw)/3 {
		t.Errorf("keyframe of %d bytes compressed to %d", len(raw), len(data))
	}
	got, err := inflateKeyframe(data, len(raw))
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("inflate: %v, equal %t", err, bytes.Equal(got, raw))
	}
	if _, err := inflateKeyframe(data[:len(data)/2], len(raw)); err == nil {
		t.Error("a truncated keyframe was accepted")
	}
}

// TestCommonPrefixAndSuffix checks the word-at-a-time comparisons of
// encodeDelta against byte-by-byte loops, so that the delta encoder's
// output (pinned by the codec's golden files) cannot change with them:
// random pairs of every length up to 40 that share a prefix and a suffix
// of every length, and the bodies of TestDeltaRoundTrip.
func TestCommonPrefixAndSuffix(t *testing.T) {
	prefix := func(a, b []byte) int {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	suffix := func(a, b []byte) int {
		n := 0
		for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
			n++
		}
		return n
	}
	rng := rand.New(rand.NewPCG(3, 5))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(3))
		}
		return b
	}
	check := func(a, b []byte) {
		t.Helper()
		if got, want := commonPrefix(a, b), prefix(a, b); got != want {
			t.Fatalf("commonPrefix(%q, %q) = %d, want %d", a, b, got, want)
		}
		if got, want := commonSuffix(a, b), suffix(a, b); got != want {
			t.Fatalf("commonSuffix(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
	for la := range 41 {
		for lb := range 41 {
			for range 20 {
				a, b := random(la), random(lb)
				shared := rng.IntN(min(la, lb) + 1)
				copy(b, a[:shared])
				copy(b[lb-shared:], a[la-shared:])
				check(a, b)
			}
		}
	}
	base, err := os.ReadFile("../../testdata/bodies/deployment.json")
	if err != nil {
		t.Fatal(err)
	}
	check(base, base)
	check(base, bytes.Replace(base, []byte(`"48213"`), []byte(`"48214"`), 1))
	check(base, base[:len(base)-1])
	check(base[1:], base)
}
