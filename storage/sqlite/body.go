package sqlite

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync"
)

// A body is stored once per object version: Append stores no new body
// when an object's body is its latest one (a relist of an unchanged
// object) or one of its batch's (schema version 5; before, a body was
// looked up by hash in the whole journal). Bodies are stored in one of two
// encodings:
//
//   - a keyframe: the raw JSON deflated with a preset dictionary of typical
//     Kubernetes JSON (base is NULL; the dictionary is format_dictionary.json);
//   - a delta: copy/insert instructions against the raw JSON of a keyframe
//     of the same object (base is the keyframe's body id).
//
// Deltas always point at a keyframe, never at another delta, so reading any
// body costs at most one inflate and one delta application. Most MODIFIED
// events change a few fields (resourceVersion, a managedFields time, a
// replica count), so their delta is tens of bytes.

// errCorruptBody is returned (wrapped) when a stored body cannot be decoded.
var errCorruptBody = errors.New("sqlite: corrupt object body")

var deflaters = sync.Pool{New: func() any {
	w, err := flate.NewWriterDict(io.Discard, flate.DefaultCompression, dictionary)
	if err != nil {
		// Only an invalid level fails, and the level is a constant.
		return nil
	}
	return w
}}

var inflaters = sync.Pool{New: func() any {
	return flate.NewReaderDict(bytes.NewReader(nil), dictionary)
}}

// deflateKeyframe compresses a body with the preset dictionary.
func deflateKeyframe(raw []byte) ([]byte, error) {
	w, _ := deflaters.Get().(*flate.Writer)
	if w == nil {
		return nil, errors.New("sqlite: no deflate writer")
	}
	defer deflaters.Put(w)
	var buf bytes.Buffer
	buf.Grow(len(raw) / 3)
	w.Reset(&buf)
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// inflateKeyframe reverses deflateKeyframe.
func inflateKeyframe(data []byte, rawLen int) ([]byte, error) {
	return inflateKeyframeInto(nil, data, rawLen)
}

// inflateKeyframeInto is inflateKeyframe into dst's memory when it has
// room.
func inflateKeyframeInto(dst, data []byte, rawLen int) ([]byte, error) {
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(data), dictionary); err != nil {
		return nil, err
	}
	out := slices.Grow(dst[:0], rawLen)[:rawLen]
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("%w: inflate: %v", errCorruptBody, err)
	}
	return out, nil
}

// Delta format: a sequence of instructions, each a uvarint header h:
// h&1 == 1 is a copy of h>>1 bytes from the base at the uvarint offset
// that follows; h&1 == 0 inserts the h>>1 literal bytes that follow.

const (
	deltaWindow    = 8  // bytes hashed to find a match
	deltaStride    = 4  // the base is indexed at every deltaStride-th byte
	deltaMinMatch  = 12 // shorter matches are cheaper as literals
	deltaTableBits = 12
)

// deltaTables holds the hash tables of encodeRegion.
var deltaTables = sync.Pool{New: func() any { return new([1 << deltaTableBits]int32) }}

// encodeDelta returns instructions that rebuild target from base. The
// common prefix and suffix are found first (a new version usually differs
// in a few places), and only the region between them is searched.
func encodeDelta(base, target []byte) []byte {
	prefix := commonPrefix(base, target)
	suffix := commonSuffix(base[prefix:], target[prefix:])
	out := make([]byte, 0, 64)
	if prefix > 0 {
		out = appendCopy(out, 0, prefix)
	}
	out = encodeRegion(out, base, prefix, len(base)-suffix, target[prefix:len(target)-suffix])
	if suffix > 0 {
		out = appendCopy(out, len(base)-suffix, suffix)
	}
	return out
}

func appendCopy(out []byte, offset, length int) []byte {
	out = binary.AppendUvarint(out, uint64(length)<<1|1)
	return binary.AppendUvarint(out, uint64(offset))
}

// encodeRegion appends instructions that produce target from copies of
// base[lo:hi] and literals.
func encodeRegion(out, base []byte, lo, hi int, target []byte) []byte {
	if hi-lo < deltaWindow || len(target) < deltaWindow {
		return appendInsert(out, target)
	}
	// Index every deltaStride-th window of the region (later positions
	// win). A match of at least deltaWindow+deltaStride-1 bytes contains an
	// indexed window, and extending it backwards finds where it starts.
	// The table is sized to the region: clearing it costs as much as
	// indexing a small region.
	bits := uint(6)
	for 1<<bits < 2*(hi-lo)/deltaStride && bits < deltaTableBits {
		bits++
	}
	// The table holds positions plus one, so that a cleared table is
	// empty; tables are reused (allocating and filling one took three
	// quarters of encodeRegion's time).
	tp := deltaTables.Get().(*[1 << deltaTableBits]int32)
	defer deltaTables.Put(tp)
	table := tp[:1<<bits]
	clear(table)
	for i := lo; i+deltaWindow <= hi; i += deltaStride {
		table[windowHash(base[i:], bits)] = int32(i + 1)
	}
	literalStart := 0
	i := 0
	for i+deltaWindow <= len(target) {
		cand := table[windowHash(target[i:], bits)] - 1
		if cand < 0 || !bytes.Equal(base[cand:int(cand)+deltaWindow], target[i:i+deltaWindow]) {
			i++
			continue
		}
		// Extend the match forward, then backward into pending literals.
		bStart, tStart := int(cand), i
		bEnd, tEnd := bStart+deltaWindow, tStart+deltaWindow
		n := commonPrefix(base[bEnd:hi], target[tEnd:])
		bEnd, tEnd = bEnd+n, tEnd+n
		for bStart > lo && tStart > literalStart && base[bStart-1] == target[tStart-1] {
			bStart--
			tStart--
		}
		if tEnd-tStart < deltaMinMatch {
			i++
			continue
		}
		out = appendInsert(out, target[literalStart:tStart])
		out = appendCopy(out, bStart, tEnd-tStart)
		i, literalStart = tEnd, tEnd
	}
	return appendInsert(out, target[literalStart:])
}

// commonPrefix returns the length of the longest common prefix of a and
// b, comparing eight bytes at a time.
func commonPrefix(a, b []byte) int {
	n := 0
	for len(a)-n >= 8 && len(b)-n >= 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
		n += 8
	}
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// commonSuffix returns the length of the longest common suffix of a and
// b, comparing eight bytes at a time.
func commonSuffix(a, b []byte) int {
	n := 0
	for len(a)-n >= 8 && len(b)-n >= 8 {
		if x := binary.BigEndian.Uint64(a[len(a)-n-8:]) ^ binary.BigEndian.Uint64(b[len(b)-n-8:]); x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
		n += 8
	}
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

func appendInsert(out, literal []byte) []byte {
	if len(literal) == 0 {
		return out
	}
	out = binary.AppendUvarint(out, uint64(len(literal))<<1)
	return append(out, literal...)
}

func windowHash(b []byte, bits uint) uint32 {
	v := binary.LittleEndian.Uint64(b)
	return uint32((v * 0x9E3779B185EBCA87) >> (64 - bits))
}

// applyDelta rebuilds a body from its base and delta.
func applyDelta(base, delta []byte, rawLen int) ([]byte, error) {
	return applyDeltaInto(nil, base, delta, rawLen)
}

// applyDeltaInto is applyDelta into dst's memory when it has room.
func applyDeltaInto(dst, base, delta []byte, rawLen int) ([]byte, error) {
	out := slices.Grow(dst[:0], rawLen)
	for len(delta) > 0 {
		h, n := binary.Uvarint(delta)
		if n <= 0 {
			return nil, fmt.Errorf("%w: bad delta header", errCorruptBody)
		}
		delta = delta[n:]
		length := h >> 1
		if h&1 == 0 {
			if length > uint64(len(delta)) {
				return nil, fmt.Errorf("%w: delta literal overruns", errCorruptBody)
			}
			out = append(out, delta[:length]...)
			delta = delta[length:]
			continue
		}
		off, n := binary.Uvarint(delta)
		if n <= 0 || off > uint64(len(base)) || length > uint64(len(base))-off {
			return nil, fmt.Errorf("%w: delta copy out of range", errCorruptBody)
		}
		delta = delta[n:]
		out = append(out, base[off:off+length]...)
	}
	if len(out) != rawLen {
		return nil, fmt.Errorf("%w: delta yields %d bytes, want %d", errCorruptBody, len(out), rawLen)
	}
	return out, nil
}
