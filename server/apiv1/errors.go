package apiv1

import (
	"fmt"

	"github.com/krply/krply/storage"
)

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
	CodeNotImplemented       = "not_implemented"
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

// Unwrap returns the sentinel errors the code stands for, so that an
// error answered over HTTP is checked as the library's own:
// errors.Is(err, storage.ErrNotFound) (krply.ErrNotFound) for not_found,
// storage.ErrInvalidArgument for invalid_parameter, invalid_body,
// range_too_large and invalid_cursor (that one also
// storage.ErrInvalidQuery), storage.ErrReadOnly for read_only.
func (e *Error) Unwrap() []error {
	switch e.Code {
	case CodeNotFound:
		return []error{storage.ErrNotFound}
	case CodeInvalidParameter, CodeInvalidBody, CodeRangeTooLarge:
		return []error{storage.ErrInvalidArgument}
	case CodeInvalidCursor:
		return []error{storage.ErrInvalidQuery, storage.ErrInvalidArgument}
	case CodeReadOnly:
		return []error{storage.ErrReadOnly}
	}
	return nil
}
