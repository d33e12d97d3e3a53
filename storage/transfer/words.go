package transfer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/krply/krply/event"
)

// A stream is read by people who know its keys, not the Go fields they
// decode into: the messages about a line say "observedAt", not
// "ObservedAt" or "Record.ObservedAt".

// recordError is a record line the journal refuses, in the format's words;
// it unwraps to the journal's error (storage.ErrInvalidRecord).
type recordError struct {
	msg string
	err error
}

func (e *recordError) Error() string { return e.msg }
func (e *recordError) Unwrap() error { return e.err }

// fieldKeys maps the Go names of record fields that journal.Validate's
// messages use to the keys of a record line.
var fieldKeys = map[string]string{
	"EventID": "eventID", "ObservedAt": "observedAt", "ClusterID": "clusterID", "StreamID": "streamID",
	"ObjectHash": "objectHash", "Object": "object", "BaselineID": "baselineID", "Baseline.ID": "baseline.id",
	"TargetEventID": "audit.targetEventID", "Resource": "resource", "Saved": "snapshot", "Audit": "audit",
	"Gap": "gap", "Coverage": "coverage", "Checkpoint": "checkpoint", "Baseline": "baseline",
}

// goNames matches a quoted string (left as it is: an ID or a value) or a
// Go name of fieldKeys.
var goNames = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\b(?:Baseline\.ID|EventID|ObservedAt|ClusterID|StreamID|ObjectHash|Object|BaselineID|TargetEventID|Resource|Saved|Audit|Gap|Coverage|Checkpoint|Baseline)\b`)

// recordProblem rewords err, the journal's refusal of rec, with the keys
// of the line.
func recordProblem(rec event.Record, err error) error {
	if rec.ObjectHash != "" && len(rec.Object) > 0 && rec.ObjectHash != event.ObjectHash(rec.Object) {
		return &recordError{err: err, msg: fmt.Sprintf("record %q: its object does not match its objectHash: the body was changed", rec.EventID)}
	}
	msg := goNames.ReplaceAllStringFunc(err.Error(), func(m string) string {
		if key, ok := fieldKeys[m]; ok {
			return key
		}
		return m
	})
	return &recordError{err: err, msg: msg}
}

// jsonProblem says what is wrong with a line's JSON.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("the line is %s, want an object", article(te.Value))
	case errors.As(err, &te):
		return fmt.Sprintf("%q is %s, want %s", strings.TrimPrefix(te.Field, "Record."), article(te.Value), kindOf(te.Type))
	case errors.As(err, &pe):
		return fmt.Sprintf("a time is not RFC 3339: %q", pe.Value)
	case strings.Contains(err.Error(), "Time.UnmarshalJSON"):
		return "a time is not a string (RFC 3339)"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// article puts "a" or "an" before a JSON kind ("string", "object"), not
// before "number 1.5".
func article(kind string) string {
	switch {
	case strings.HasPrefix(kind, "number "):
		return kind
	case strings.HasPrefix(kind, "o"), strings.HasPrefix(kind, "a"):
		return "an " + kind
	}
	return "a " + kind
}

// kindOf names the JSON a Go type decodes from.
func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	}
	return "an object"
}
