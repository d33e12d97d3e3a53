// Package charttest holds no code: its tests check krply's Helm chart
// (deploy/helm/krply) with Helm as a Go library — lint, schema validation
// and rendering for several values files — and apply every rendering to a
// real control plane with a server-side dry run (krplytest/testenv). It is
// a nested module so that Helm stays out of krply's own dependencies.
package charttest
