package replay

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/krply/krply/event"
)

func TestConflictManager(t *testing.T) {
	tests := map[string]string{
		`conflict with "helm"`:                                                          "helm",
		`conflict with "kubectl-client-side-apply" using v1`:                            "kubectl-client-side-apply",
		`conflict with "kube-controller-manager" using apps/v1 at 2026-01-01T00:00:00Z`: "kube-controller-manager",
		`conflict with "x" with subresource "status"`:                                   "x",
		`conflict with "quote\"d"`:                                                      `quote"d`,
		`something else`:                                                                "",
		`conflict with helm`:                                                            "",
	}
	for msg, want := range tests {
		if got := conflictManager(msg); got != want {
			t.Errorf("conflictManager(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestFailedClassifiesServerErrors(t *testing.T) {
	cm := event.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "sandbox", Name: "settings"}
	conflict := apierrors.NewApplyConflict([]metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other-tool"`, Field: ".data.color"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "helm" using v1`, Field: ".data.size"},
	}, "Apply failed with 2 conflicts")
	tests := []struct {
		name      string
		err       error
		action    Action
		conflicts []Conflict
		missingNS string
		code      int32
	}{
		{"field manager conflict", fmt.Errorf("wrapped: %w", conflict), ActionConflict, []Conflict{
			{Manager: "other-tool", Field: ".data.color", Message: `conflict with "other-tool"`},
			{Manager: "helm", Field: ".data.size", Message: `conflict with "helm" using v1`},
		}, "", 409},
		{"missing namespace", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "sandbox"), ActionNotValidated, nil, "sandbox", 404},
		{"another namespace missing", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "elsewhere"), ActionError, nil, "", 404},
		{"unknown resource", apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w"), ActionError, nil, "", 404},
		{"optimistic lock conflict", apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "settings", errors.New("changed")), ActionError, nil, "", 409},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "settings", field.ErrorList{field.Required(field.NewPath("data"), "")}), ActionError, nil, "", 422},
		{"not an API error", errors.New("connection refused"), ActionError, nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := failed(ObjectResult{Ref: cm}, tt.err)
			if res.Action != tt.action || res.MissingNamespace != tt.missingNS || res.Code != tt.code || res.Validated {
				t.Errorf("result = %+v, want action %s, missing namespace %q, code %d", res, tt.action, tt.missingNS, tt.code)
			}
			if fmt.Sprint(res.Conflicts) != fmt.Sprint(tt.conflicts) {
				t.Errorf("conflicts = %+v, want %+v", res.Conflicts, tt.conflicts)
			}
			if res.Clean() || res.Message == "" {
				t.Errorf("a failed request is clean or has no message: %+v", res)
			}
		})
	}
}

func TestDryRunStatus(t *testing.T) {
	ns := func(name string, a Action, validated bool) ObjectResult {
		return ObjectResult{Ref: event.ResourceRef{Version: "v1", Resource: "namespaces", Name: name}, Action: a, Validated: validated}
	}
	obj := func(a Action, validated bool, missing string) ObjectResult {
		return ObjectResult{Ref: event.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "sandbox", Name: "x"},
			Action: a, Validated: validated, MissingNamespace: missing}
	}
	tests := []struct {
		name    string
		results []ObjectResult
		want    Status
	}{
		{"all clean", []ObjectResult{ns("sandbox", ActionUnchanged, true), obj(ActionCreate, true, ""), obj(ActionChange, true, "")}, StatusDryRunOK},
		{"no objects", nil, StatusDryRunOK},
		{"namespace the plan creates", []ObjectResult{ns("sandbox", ActionCreate, true), obj(ActionNotValidated, false, "sandbox")}, StatusDryRunNeedsNamespaces},
		{"namespace the plan does not create", []ObjectResult{ns("other", ActionCreate, true), obj(ActionNotValidated, false, "sandbox")}, StatusDryRunFailed},
		{"namespace that failed its own dry run", []ObjectResult{ns("sandbox", ActionError, false), obj(ActionNotValidated, false, "sandbox")}, StatusDryRunFailed},
		{"conflict", []ObjectResult{ns("sandbox", ActionCreate, true), obj(ActionNotValidated, false, "sandbox"), obj(ActionConflict, false, "")}, StatusDryRunFailed},
		{"error", []ObjectResult{obj(ActionError, false, "")}, StatusDryRunFailed},
		{"create not validated", []ObjectResult{obj(ActionCreate, false, "")}, StatusDryRunFailed},
	}
	for _, tt := range tests {
		if got := dryRunStatus(tt.results); got != tt.want {
			t.Errorf("%s: status %s, want %s", tt.name, got, tt.want)
		}
	}
}
