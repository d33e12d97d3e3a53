package faultproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type faultKind int

const (
	faultStatus faultKind = iota + 1
	faultWatchError
	faultAbort
	faultDelay
)

// Fault is what the proxy does to a request instead of (or before)
// forwarding it. Make one with Status, WatchError, Abort or Delay.
type Fault struct {
	kind       faultKind
	code       int
	retryAfter int
	delay      time.Duration
}

// Status answers with an HTTP error whose body is a metav1.Status, as the
// apiserver writes it, so apierrors predicates work on the client's error:
//
//	403 Forbidden        apierrors.IsForbidden
//	404 NotFound         apierrors.IsNotFound (a vanished resource type)
//	409 Conflict         apierrors.IsConflict
//	410 Expired          apierrors.IsResourceExpired (not IsGone), as a list
//	                     or watch from a compacted resourceVersion gets it
//	429 TooManyRequests  apierrors.IsTooManyRequests
//	500 InternalError    apierrors.IsInternalError
//	503 ServiceUnavailable apierrors.IsServiceUnavailable
//
// Other codes get reason Unknown. No Retry-After header is sent unless
// WithRetryAfter asks for one.
func Status(code int) Fault { return Fault{kind: faultStatus, code: code} }

// WatchError answers a watch request the way a real apiserver reports an
// error to a watch that has started: HTTP 200, then a single ERROR event
// whose object is a metav1.Status with the code (for 410: reason Expired,
// "too old resource version"), then the end of the stream. A client-go
// watch delivers it as a watch.Error event. Requests other than watches get
// Status(code) instead.
func WatchError(code int) Fault { return Fault{kind: faultWatchError, code: code} }

// Abort drops the request without an answer: the HTTP/2 stream is reset (on
// HTTP/1.1 the connection is closed), and the client sees a transport error,
// not an API status.
func Abort() Fault { return Fault{kind: faultAbort} }

// Delay holds the request for d, then forwards it.
func Delay(d time.Duration) Fault { return Fault{kind: faultDelay, delay: d} }

// WithRetryAfter adds a Retry-After header (and details.retryAfterSeconds)
// to a Status fault. client-go's REST client retries a 429 or 5xx answer
// that carries Retry-After by itself (up to 10 times) without returning an
// error, as the apiserver's priority and fairness 429s do.
func (f Fault) WithRetryAfter(seconds int) Fault {
	f.retryAfter = seconds
	return f
}

func (f Fault) String() string {
	switch f.kind {
	case faultStatus:
		if f.retryAfter > 0 {
			return fmt.Sprintf("status %d (retry after %ds)", f.code, f.retryAfter)
		}
		return fmt.Sprintf("status %d", f.code)
	case faultWatchError:
		return fmt.Sprintf("watch error %d", f.code)
	case faultAbort:
		return "abort"
	case faultDelay:
		return fmt.Sprintf("delay %v", f.delay)
	}
	return "no fault"
}

// injectedBy is in every message the proxy makes up, so a test log tells an
// injected failure from a real one.
const injectedBy = "injected by faultproxy"

// status builds the metav1.Status the apiserver would send for code.
func status(code, retryAfter int, req Request) metav1.Status {
	gr := schema.GroupResource{Group: req.Group, Resource: req.Resource}
	cause := errors.New(injectedBy)
	var err *apierrors.StatusError
	switch code {
	case http.StatusUnauthorized:
		err = apierrors.NewUnauthorized(injectedBy)
	case http.StatusForbidden:
		err = apierrors.NewForbidden(gr, req.Name, cause)
	case http.StatusNotFound:
		if req.Name != "" {
			err = apierrors.NewNotFound(gr, req.Name)
		} else {
			err = apierrors.NewGenericServerResponse(code, req.Verb, gr, "", "the server could not find the requested resource ("+injectedBy+")", 0, false)
		}
	case http.StatusConflict:
		err = apierrors.NewConflict(gr, req.Name, cause)
	case http.StatusGone:
		err = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%s)", req.Query.Get("resourceVersion"), injectedBy))
	case http.StatusTooManyRequests:
		err = apierrors.NewTooManyRequests("too many requests, please try again later ("+injectedBy+")", retryAfter)
	case http.StatusInternalServerError:
		err = apierrors.NewInternalError(cause)
	case http.StatusServiceUnavailable:
		err = apierrors.NewServiceUnavailable(injectedBy)
	default:
		err = apierrors.NewGenericServerResponse(code, req.Verb, gr, req.Name, injectedBy, retryAfter, false)
	}
	s := err.ErrStatus
	s.Kind, s.APIVersion = "Status", "v1"
	s.Code = int32(code)
	if retryAfter > 0 {
		if s.Details == nil {
			s.Details = &metav1.StatusDetails{}
		}
		s.Details.RetryAfterSeconds = int32(retryAfter)
	}
	return s
}

// writeStatus answers with s as the body and s.Code as the HTTP status.
func writeStatus(w http.ResponseWriter, s metav1.Status) {
	body, _ := json.Marshal(s) // a Status always marshals
	w.Header().Set("Content-Type", "application/json")
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(body)
}

// writeWatchError answers a watch with 200 and one ERROR event.
func writeWatchError(w http.ResponseWriter, code int, req Request) {
	event := struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}{Type: "ERROR", Object: status(code, 0, req)}
	body, _ := json.Marshal(event)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}
