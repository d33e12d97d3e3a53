package server_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krply/krply/krplytest/golden"
	"github.com/krply/krply/server"
)

// The handler serves its OpenAPI document at /api/v1/openapi.json, and
// docs/reference/openapi.json is a copy of it:
//
//	go test ./server -run TestOpenAPIDocument -update
func TestOpenAPIDocument(t *testing.T) {
	doc, err := server.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(golden.ModuleRoot(t), "docs", "reference", "openapi.json"), append(doc, '\n'),
		"docs/reference/openapi.json is generated from the routes and wire types: rewrite it with go test ./server -run TestOpenAPIDocument -update")

	j := newRecorded(t)
	_, base := j.serve()
	status, body, header := request(t, http.MethodGet, base+server.OpenAPIPath, "")
	if status != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s = %d %q", server.OpenAPIPath, status, header.Get("Content-Type"))
	}
	var served, made any
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(doc, &made)
	a, _ := json.Marshal(served)
	b, _ := json.Marshal(made)
	if string(a) != string(b) {
		t.Errorf("the served document differs from OpenAPI()")
	}
	// Spot checks of what the wire types make of it.
	for _, want := range []string{
		`"/api/v1/snapshots/{id}"`, `"operationId": "postPlansIdDryrun"`, `"ObjectState"`, `"$ref": "#/components/schemas/Snapshot"`,
		`"observedAt": {`, `"format": "date-time"`, `"text/event-stream"`,
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the document lacks %s", want)
		}
	}
}
