// Package buildinfo reads the version of krply's core module from the
// running program's build information: the one answer of krply.Version
// and of the krply_build_info metric.
package buildinfo

import "runtime/debug"

// Version returns the version of this module as the running program was
// built with it: the module version go build recorded (v1.2.3 when the
// program was built as a module dependency or installed with go install
// module@version), or "(devel)" when built from a working tree, where no
// version applies. It is read from the build information, so no constant
// can disagree with the tag a release was built from.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Devel
	}
	return ModuleVersion(info)
}

// Devel is what Version returns without a module version.
const Devel = "(devel)"

// ModulePath is the core module's path.
const ModulePath = "github.com/krply/krply"

// ModuleVersion is this module's version in info: the main module's when
// this module is the main module, else the dependency's (its replacement's
// when it is replaced by a version).
func ModuleVersion(info *debug.BuildInfo) string {
	m := &info.Main
	if m.Path != ModulePath {
		m = nil
		for _, d := range info.Deps {
			if d.Path == ModulePath {
				m = d
				if d.Replace != nil {
					m = d.Replace
				}
				break
			}
		}
	}
	if m == nil || m.Version == "" {
		return Devel
	}
	return m.Version
}
