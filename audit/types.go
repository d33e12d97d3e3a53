package audit

import (
	"encoding/json"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// APIVersion is the audit API version of the events this package reads
// (and of APIVersionV1beta1).
const APIVersion = "audit.k8s.io/v1"

// APIVersionV1beta1 is the audit events' older version, which API servers
// wrote before Kubernetes 1.24. Its events are read as audit.k8s.io/v1
// ones: the fields this package reads are the same.
const APIVersionV1beta1 = "audit.k8s.io/v1beta1"

// Level is how much of a request the audit policy recorded.
type Level string

// The audit levels, from least to most detail.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

// Stage is the stage of request handling at which an audit event was
// written.
type Stage string

// The audit stages.
const (
	StageRequestReceived  Stage = "RequestReceived"
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

// Event is one audit.k8s.io/v1 Event, as the API server's log and webhook
// backends write it. It has the fields of the upstream type
// (k8s.io/apiserver/pkg/apis/audit/v1.Event) with the same JSON names; the
// request and response objects are kept as raw JSON.
type Event struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	// Level is the audit level the policy chose for the request.
	Level Level `json:"level"`
	// AuditID is unique per request; every stage of a request has the same.
	AuditID string `json:"auditID"`
	// Stage is the stage of request handling this event describes.
	Stage Stage `json:"stage"`
	// RequestURI is the request's path and query, as the client sent it.
	RequestURI string `json:"requestURI"`
	// Verb is the Kubernetes verb (get, list, watch, create, update, patch,
	// delete, deletecollection) or, for non-resource requests, the
	// lower-cased HTTP method.
	Verb string `json:"verb"`
	// User is the authenticated user.
	User authnv1.UserInfo `json:"user"`
	// ImpersonatedUser is the user the request impersonated, if any.
	ImpersonatedUser *authnv1.UserInfo `json:"impersonatedUser,omitempty"`
	// AuthenticationMetadata is set when impersonation was constrained.
	AuthenticationMetadata *AuthenticationMetadata `json:"authenticationMetadata,omitempty"`
	// SourceIPs are the client's addresses, from X-Forwarded-For, X-Real-Ip
	// and the connection, in that order.
	SourceIPs []string `json:"sourceIPs,omitempty"`
	// UserAgent is the client's User-Agent header.
	UserAgent string `json:"userAgent,omitempty"`
	// ObjectRef is the object the request is about; nil for non-resource
	// requests.
	ObjectRef *ObjectReference `json:"objectRef,omitempty"`
	// ResponseStatus is the outcome; its Code is the HTTP status code.
	ResponseStatus *metav1.Status `json:"responseStatus,omitempty"`
	// RequestObject is the request body (Request level and above).
	RequestObject json.RawMessage `json:"requestObject,omitempty"`
	// ResponseObject is the response body (RequestResponse level).
	ResponseObject json.RawMessage `json:"responseObject,omitempty"`
	// RequestReceivedTimestamp is when the API server received the request.
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
	// StageTimestamp is when the request reached Stage.
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
	// Annotations are set by plugins, e.g. the authorization decision.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AuthenticationMetadata is the upstream type of the same name.
type AuthenticationMetadata struct {
	ImpersonationConstraint string `json:"impersonationConstraint,omitempty"`
}

// ObjectReference names the object of a request, as the audit log does.
// For a create, Name (and, at Request level and above, more) is filled in
// from the request body.
type ObjectReference struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}

// EventList is the body the webhook backend POSTs: a batch of events.
type EventList struct {
	Kind       string          `json:"kind,omitempty"`
	APIVersion string          `json:"apiVersion,omitempty"`
	Metadata   metav1.ListMeta `json:"metadata,omitempty"`
	Items      []Event         `json:"items"`
}
