package replayapi

import "errors"

// ErrInvalidPlan is returned when a plan's content cannot be encoded for
// its hash, and, by replay.ParsePlan and replay.Planner.LoadPlan, when a
// saved plan cannot be decoded. Its text names replay, whose error it has
// always been; replay.ErrInvalidPlan is the same value.
var ErrInvalidPlan = errors.New("replay: invalid plan")
