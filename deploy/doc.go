// Package deploy holds no code: its tests check the plain manifests under
// deploy/ against a real control plane (internal/testenv). The Helm chart
// is checked by the nested module deploy/helm/charttest.
package deploy
