package buildinfo

import (
	"runtime/debug"
	"testing"
)

// Version is the module version the build recorded: the main module's when
// krply is the program, the dependency's (or its replacement's) otherwise,
// and "(devel)" where the build recorded none.
func TestModuleVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"main module", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"working tree", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"}}, "(devel)"},
		{"dependency", debug.BuildInfo{
			Main: debug.Module{Path: "github.com/krply/krply/cmd/kubectl-krply", Version: "v0.4.0"},
			Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.37.2"}, {Path: ModulePath, Version: "v0.4.0"}},
		}, "v0.4.0"},
		{"replaced dependency", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/tool"},
			Deps: []*debug.Module{{Path: ModulePath, Version: "v0.4.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v0.4.1-fork"}}},
		}, "v0.4.1-fork"},
		{"replaced by a folder", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/tool"},
			Deps: []*debug.Module{{Path: ModulePath, Version: "v0.4.0", Replace: &debug.Module{Path: "../krply"}}},
		}, "(devel)"},
		{"not a dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/tool", Version: "v1.0.0"}}, "(devel)"},
	} {
		if got := ModuleVersion(&tc.info); got != tc.want {
			t.Errorf("%s: version %q, want %q", tc.name, got, tc.want)
		}
	}
	if v := Version(); v == "" {
		t.Error("Version() is empty")
	}
}
