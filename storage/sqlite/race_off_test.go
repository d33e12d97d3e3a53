//go:build !race

package sqlite_test

// logStartsOverBodies is how many bytes of bodies TestLogStartsOver
// writes (see race_on_test.go).
const logStartsOverBodies = 48 << 20
