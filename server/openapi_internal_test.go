package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/krply/krply/storage/memory"
)

// The OpenAPI document describes exactly the routes and methods the
// handler registers, and each route's parameters are described.
func TestOpenAPIRoutes(t *testing.T) {
	store := memory.New()
	defer store.Close()
	h := NewHandler(store, WithWrites()).(*handler)
	described := map[string][]string{}
	for _, op := range operations {
		described[op.path] = append(described[op.path], op.method)
		for _, p := range op.params {
			if _, ok := queryParams[p]; !ok {
				t.Errorf("%s %s: parameter %q is not described (queryParams)", op.method, op.path, p)
			}
		}
	}
	for path, methods := range described {
		slices.Sort(methods)
		if served := h.served[path]; !slices.Equal(served, methods) {
			t.Errorf("%s%s: the document describes %v, the handler serves %v", Prefix, path, methods, served)
		}
	}
	for path, methods := range h.served {
		if _, ok := described[path]; !ok {
			t.Errorf("%s%s (%s) is served but not in the OpenAPI document: add it to operations", Prefix, path, strings.Join(methods, ", "))
		}
	}
}
