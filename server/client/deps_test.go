package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsNoServer fails when a program that imports the client would
// link the server: the handler, the embedded web UI, the Collector or the
// audit webhook; or replay's dry-run and apply path with the client-go
// packages it writes through. The client shares only the wire types
// (server/apiv1) and the data types they hold (replay/replayapi).
func TestImportsNoServer(t *testing.T) {
	const client = "github.com/krply/krply/server/client"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", client).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", client, err, stderr)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/krply/krply/server/apiv1") {
		t.Fatalf("go list -deps %s lists no server/apiv1: %q", client, deps)
	}
	for _, forbidden := range []string{
		"github.com/krply/krply/server",
		"github.com/krply/krply/server/ui",
		"github.com/krply/krply/watch",
		"github.com/krply/krply/audit",
		"github.com/krply/krply/replay",
		"k8s.io/client-go/dynamic",
		"k8s.io/client-go/rest",
	} {
		if slices.Contains(deps, forbidden) {
			t.Errorf("the client imports %s (go list -deps %s)", forbidden, client)
		}
	}
}
