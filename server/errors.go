package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/krply/krply/replay"
	"github.com/krply/krply/server/apiv1"
	"github.com/krply/krply/storage"
)

// ErrInvalidArgument is krply's one sentinel for an argument or an option
// that cannot be used (storage.ErrInvalidArgument).
var ErrInvalidArgument = storage.ErrInvalidArgument

// Codes of Error, stable across versions (declared in package
// server/apiv1; a client accepts codes it does not know and treats them by
// status).
const (
	CodeInvalidParameter     = apiv1.CodeInvalidParameter
	CodeInvalidCursor        = apiv1.CodeInvalidCursor
	CodeRangeTooLarge        = apiv1.CodeRangeTooLarge
	CodeInvalidBody          = apiv1.CodeInvalidBody
	CodeConfirmationRequired = apiv1.CodeConfirmationRequired
	CodeUnauthenticated      = apiv1.CodeUnauthenticated
	CodeForbidden            = apiv1.CodeForbidden
	CodeReadOnly             = apiv1.CodeReadOnly
	CodeSecret               = apiv1.CodeSecret
	CodeNotFound             = apiv1.CodeNotFound
	CodeMethodNotAllowed     = apiv1.CodeMethodNotAllowed
	CodeConflict             = apiv1.CodeConflict
	CodeCoverageIncomplete   = apiv1.CodeCoverageIncomplete
	CodeRefused              = apiv1.CodeRefused
	CodeBodyTooLarge         = apiv1.CodeBodyTooLarge
	CodeInternal             = apiv1.CodeInternal
	CodeNotReady             = apiv1.CodeNotReady
	CodeTimeout              = apiv1.CodeTimeout
	CodeUnavailable          = apiv1.CodeUnavailable
	CodeTooManyRequests      = apiv1.CodeTooManyRequests
	CodeNotImplemented       = apiv1.CodeNotImplemented
)

// Error is the JSON body of every error answer, and the error the client
// returns for one (see apiv1.Error).
type Error = apiv1.Error

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
