// Package deploy holds no code: its tests check the plain manifests under
// deploy/ against a real control plane (krplytest/testenv), the image's
// build script and entrypoint, and the recorder serving the query API
// with --delegated-auth under nothing but the recorder's role. The Helm
// chart is checked by the nested module deploy/helm/charttest.
package deploy
