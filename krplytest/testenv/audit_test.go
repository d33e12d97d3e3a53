package testenv_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/krply/krply/krplytest/testenv"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	Verb  string `json:"verb"`
	Stage string `json:"stage"`
	User  struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseObject struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	} `json:"responseObject"`
}

// With WithAudit, a write appears in the audit log with its user, its object
// and — at RequestResponse level — the resourceVersion it produced, which is
// what audit correlation joins on.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, time.Minute)
	ns := env.CreateNamespace(t)
	if env.AuditLogPath() == "" {
		t.Fatal("the shared environment was started WithAudit but has no audit log")
	}
	created := mustCreate(t, ctx, client(t, env.ConfigFor(testenv.UserAlice)), configMap(ns, "audited", nil))

	var found *auditEvent
	deadline := time.Now().Add(10 * time.Second)
	for found == nil && time.Now().Before(deadline) {
		found = findAuditEvent(t, env.AuditLogPath(), func(e *auditEvent) bool {
			return e.Verb == "create" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == "audited"
		})
		if found == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if found == nil {
		t.Fatalf("no audit event for the create of %s/audited in %s", ns, env.AuditLogPath())
	}
	if found.User.Username != testenv.UserAlice || found.Stage != "ResponseComplete" || found.ObjectRef.Resource != "configmaps" {
		t.Errorf("audit event: user %q stage %q resource %q, want alice, ResponseComplete, configmaps",
			found.User.Username, found.Stage, found.ObjectRef.Resource)
	}
	if got, want := found.ResponseObject.Metadata.ResourceVersion, created.GetResourceVersion(); got != want {
		t.Errorf("audit event's responseObject resourceVersion = %q, want %q", got, want)
	}
}

// findAuditEvent returns the first complete line of the audit log that
// match accepts; a line being written is skipped.
func findAuditEvent(t *testing.T, path string, match func(*auditEvent) bool) *auditEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	for _, line := range lines[:len(lines)-1] { // the last is empty or incomplete
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("audit log line %q: %v", line, err)
		}
		if match(&e) {
			return &e
		}
	}
	return nil
}
