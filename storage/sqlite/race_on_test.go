//go:build race

package sqlite_test

// logStartsOverBodies is how many bytes of bodies TestLogStartsOver
// writes under the race detector: half its full size, which make test
// runs without it (a log that never starts over still ends far over the
// bound; see the test).
const logStartsOverBodies = 24 << 20
