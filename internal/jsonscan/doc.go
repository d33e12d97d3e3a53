// Package jsonscan checks and walks JSON text in place, without decoding
// it: it finds where values, strings, members and items are in a byte
// slice, so that a caller reads the few fields it needs, or builds its own
// tree, and leaves the rest as it was written. The Collector reads list
// pages, watch events and object metadata with it (package watch); the
// materializer parses and compares bodies with it (package materialize).
//
// # Guarantees
//
// Every function checks what it passes over by the rules of encoding/json:
// a text it accepts whole is one encoding/json.Valid accepts, and one it
// refuses is one encoding/json refuses, nesting limit (MaxDepth) included.
// Strings are checked but not unquoted; Unquote unquotes one as
// encoding/json does. Functions take a position in the text and return the
// position after what they read, so that callers keep their own state.
//
// # Does not
//
// It does not decode numbers, check that strings are valid UTF-8 (as
// encoding/json does not; String says when they are not), nor allocate
// except for an error or an unquoted string. SkipChecked is for text
// already checked: on other text it finds an end, not an error.
//
// # Concurrency
//
// The functions keep no state: they are safe for concurrent use on the
// same text.
//
// # Close
//
// Nothing to close.
package jsonscan
