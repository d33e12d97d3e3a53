// Package charttest renders and checks krply's Helm chart.
package charttest

import (
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/engine"
	_ "helm.sh/helm/v3/pkg/lint"
	_ "github.com/krply/krply/internal/testenv"
)
