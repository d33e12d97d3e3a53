// Package enum declares an enum for wiretest's own test.
package enum

// Kind is an enum.
type Kind string

// Other is another string type.
type Other string

// The kinds, and constants that are not kinds.
const (
	KindPlain Kind  = "plain"
	KindTwo   Kind  = "two-words"
	KindSnake Kind  = "snake_case"
	OtherOne  Other = "other"
	untyped         = "untyped"
)

// KindUpper is declared alone.
const KindUpper Kind = "Upper"
