package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
)

// ErrInvalidArgument is krply's one sentinel for an argument or an option
// that cannot be used (storage.ErrInvalidArgument).
var ErrInvalidArgument = storage.ErrInvalidArgument

// Codes of Error, stable across versions (a client accepts codes it does
// not know and treats them by status).
const (
	CodeInvalidParameter     = "invalid_parameter"
	CodeInvalidCursor        = "invalid_cursor"
	CodeRangeTooLarge        = "range_too_large"
	CodeInvalidBody          = "invalid_body"
	CodeConfirmationRequired = "confirmation_required"
	CodeUnauthenticated      = "unauthenticated"
	CodeForbidden            = "forbidden"
	CodeReadOnly             = "read_only"
	CodeSecret               = "secret"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeConflict             = "conflict"
	CodeCoverageIncomplete   = "coverage_incomplete"
	CodeRefused              = "refused"
	CodeBodyTooLarge         = "body_too_large"
	CodeInternal             = "internal"
	CodeNotReady             = "not_ready"
	CodeTimeout              = "timeout"
	CodeUnavailable          = "unavailable"
	CodeTooManyRequests      = "too_many_requests"
)

// Error is the JSON body of every error answer, and the error the client
// returns for one.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// Code says what went wrong, one of the Code constants.
	Code string `json:"code"`
	// Message says what went wrong and what would work.
	Message string `json:"message"`
	// Param names the parameter or body field at fault, if one is.
	Param string `json:"param,omitempty"`
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("krply server: %d %s (%s): %s", e.Status, e.Code, e.Param, e.Message)
	}
	return fmt.Sprintf("krply server: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is makes errors.Is(err, &Error{Code: c}) match any Error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Status == 0 || t.Status == e.Status)
}

func newError(status int, code, param, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

func badParam(param, format string, args ...any) *Error {
	return newError(http.StatusBadRequest, CodeInvalidParameter, param, format, args...)
}

func notFound(format string, args ...any) *Error {
	return newError(http.StatusNotFound, CodeNotFound, "", format, args...)
}

func readOnly(format string, args ...any) *Error {
	return newError(http.StatusForbidden, CodeReadOnly, "", format, args...)
}

// asError maps an error of the library to the answer it deserves.
func asError(err error) *Error {
	var e *Error
	var coverage *replay.CoverageIncompleteError
	var unsaved *replay.UnsavedPlanError
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.DeadlineExceeded):
		return newError(http.StatusServiceUnavailable, CodeTimeout, "", "the request ran past the server's timeout: %v; narrow the question (a namespace, a resource, a shorter range)", err)
	case errors.As(err, &coverage):
		return newError(http.StatusConflict, CodeCoverageIncomplete, "", "%v", err)
	case errors.As(err, &unsaved):
		return newError(http.StatusConflict, CodeConflict, "", "%v", err)
	case errors.Is(err, storage.ErrReadOnly):
		return readOnly("%v", err)
	case errors.Is(err, replay.ErrRefused), errors.Is(err, replay.ErrIdentity):
		return newError(http.StatusConflict, CodeRefused, "", "%v", err)
	case errors.Is(err, storage.ErrNotFound):
		return notFound("%v", err)
	case errors.Is(err, storage.ErrInvalidArgument), errors.Is(err, replay.ErrInvalidPolicy), errors.Is(err, replay.ErrInvalidPlan):
		return newError(http.StatusBadRequest, CodeInvalidParameter, "", "%v", err)
	case errors.Is(err, storage.ErrInvalidQuery):
		return newError(http.StatusBadRequest, CodeInvalidCursor, "cursor", "%v", err)
	}
	return newError(http.StatusInternalServerError, CodeInternal, "", "%v", err)
}
