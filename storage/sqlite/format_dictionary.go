package sqlite

import _ "embed" // the deflate dictionary

// dictionary primes deflate with strings every Kubernetes object repeats,
// which matters for the first (keyframe) version of small objects.
//
// Its bytes are part of the journal's file format: every keyframe of
// every journal is deflated with it and can only be inflated with exactly
// the same bytes. Never edit format_dictionary.json (it has no trailing
// newline; TestFormatDictionary pins its SHA-256). A better dictionary
// needs a new schema version whose migration re-encodes the keyframes.
//
//go:embed format_dictionary.json
var dictionary []byte
