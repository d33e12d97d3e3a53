package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/server"
)

func object(ns, name, color string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": name}, "data": map[string]any{"color": color}}}
}

// The document is valid OpenAPI 3.0, and every answer of the handler over
// a recorded journal validates against it: each route's 200 and the
// errors' schema.
func TestAnswersMatchTheDocument(t *testing.T) {
	ctx := context.Background()
	raw, err := server.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}

	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(object("shop", "settings", "blue")))
	from := c.Mark()
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "green", "data", "color")
	})
	c.Create(object("shop", "extra", "red"))
	to := c.Mark()
	c.Stop()
	srv := httptest.NewServer(server.NewHandler(c.Store, server.WithWrites()))
	defer srv.Close()
	doc.Servers = openapi3.Servers{{URL: srv.URL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}

	at := func(tm time.Time) string { return tm.UTC().Format(time.RFC3339Nano) }
	obj := "cluster=" + c.ClusterID + "&resource=configmaps&namespace=shop&name=settings"
	var snapshotID, planID string
	for _, r := range []struct {
		method, path, body string
		status             int
		keep               *string // where to keep the answer's "id"
	}{
		{"GET", "/api/v1/clusters", "", 200, nil},
		{"GET", "/api/v1/streams?cluster=" + c.ClusterID + "&at=" + url.QueryEscape(at(to)), "", 200, nil},
		{"GET", "/api/v1/records?namespace=shop&types=event,baseline&limit=2", "", 200, nil},
		{"GET", "/api/v1/object?" + obj + "&at=" + url.QueryEscape(at(from)), "", 200, nil},
		{"GET", "/api/v1/history?" + obj + "&includeStatus=false", "", 200, nil},
		{"GET", "/api/v1/snapshot?namespace=shop&at=" + url.QueryEscape(at(to)), "", 200, nil},
		{"GET", "/api/v1/diff?namespace=shop&from=" + url.QueryEscape(at(from)) + "&to=" + url.QueryEscape(at(to)), "", 200, nil},
		{"POST", "/api/v1/snapshots", `{"name":"before","at":"` + at(to) + `","scope":{"namespaces":["shop"]}}`, 201, &snapshotID},
		{"GET", "/api/v1/snapshots", "", 200, nil},
		{"GET", "/api/v1/snapshots/{snapshot}", "", 200, nil},
		{"POST", "/api/v1/plans", `{"source":{"namespaces":["shop"]},"target":{"namespaces":{"shop":"shop-copy"}},"at":"` + at(to) + `"}`, 201, &planID},
		{"GET", "/api/v1/plans", "", 200, nil},
		{"GET", "/api/v1/plans/{plan}", "", 200, nil},
		{"GET", "/api/v1/why?" + obj + "&at=" + url.QueryEscape(at(to)), "", 200, nil},
		{"GET", "/api/v1/openapi.json", "", 200, nil},
		// Errors answer the Error schema.
		{"GET", "/api/v1/object?resource=configmaps&namespace=shop", "", 400, nil},
		{"GET", "/api/v1/snapshots/nope", "", 404, nil},
		{"POST", "/api/v1/plans/{plan}/dryrun", "", 403, nil},
	} {
		path := r.path
		path = replace(path, "{snapshot}", snapshotID)
		path = replace(path, "{plan}", planID)
		req, err := http.NewRequestWithContext(ctx, r.method, srv.URL+path, bytes.NewBufferString(r.body))
		if err != nil {
			t.Fatal(err)
		}
		if r.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != r.status {
			t.Fatalf("%s %s = %d, want %d: %s", r.method, path, resp.StatusCode, r.status, body)
		}
		route, pathParams, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s %s: not in the document: %v", r.method, path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if r.body != "" {
			req.Body = io.NopCloser(bytes.NewBufferString(r.body))
		}
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			t.Errorf("%s %s: the request does not match the document: %v", r.method, path, err)
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		out.SetBodyBytes(body)
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Errorf("%s %s: the answer does not match the document: %v\n%s", r.method, path, err, body)
		}
		if r.keep != nil {
			*r.keep = idOf(t, body)
		}
	}
}

func replace(path, param, value string) string {
	return strings.ReplaceAll(path, param, url.PathEscape(value))
}

// idOf is the "id" of a JSON answer.
func idOf(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.ID == "" {
		t.Fatalf("no id in %s (%v)", body, err)
	}
	return v.ID
}
