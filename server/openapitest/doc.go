// Package openapitest checks the query API's OpenAPI document
// (server.OpenAPI, docs/reference/openapi.json) with a maintained OpenAPI
// library, github.com/getkin/kin-openapi: the document is valid OpenAPI
// 3.0, and the answers of a real handler over a recorded journal — every
// route, errors included — validate against it. It is a module of its own
// so that kin-openapi stays out of the core module; it has tests only.
package openapitest
