// Command release makes one krply release from a clean checkout, for one
// version (`make release VERSION=vX.Y.Z [DIST=dist]`):
//
//  1. it checks the version (a canonical semantic version) and the tree (no
//     uncommitted change);
//  2. it sets every module's requirement on the krply modules, and the
//     go.work replacements that resolve them here, to the version, and
//     commits that when anything changed;
//  3. it tags every published module at that commit: vX.Y.Z for the core
//     module, cmd/kubectl-krply/vX.Y.Z, storage/postgres/vX.Y.Z,
//     krplytest/crtest/vX.Y.Z, cel/vX.Y.Z and crutil/vX.Y.Z (a tag that exists
//     must name that commit);
//  4. it writes the modules' zips (golang.org/x/mod/zip, from the tags) as a
//     file-based Go module proxy, dist/proxy;
//  5. it builds the plugin for each platform with go install
//     github.com/krply/krply/cmd/kubectl-krply@vX.Y.Z from that proxy, as a
//     stranger's go install builds it, so the binary's build information
//     names the version (krply.Version) with no constant to keep;
//  6. it writes the archives kubectl-krply_vX.Y.Z_OS_ARCH.tar.gz, their
//     SHA-256 checksums (checksums.txt), the krew manifest krply.yaml, the
//     packaged Helm chart krply-X.Y.Z.tgz (version and appVersion from the
//     release) with its index.yaml, and the image's build arguments
//     (image-build-args: VERSION, REVISION, CREATED for the Dockerfile's OCI
//     labels).
//
// Everything written is a function of the tagged commit: run twice for the
// same version it changes nothing (no commit, no tag moved, the same bytes
// in dist). It never pushes: pushing the commit and the tags, and uploading
// dist's files to the GitHub release, are the releaser's.
//
// The install test (release_test.go, make install-test, part of make test)
// runs it in a temporary clone for a test version and installs the result
// as a stranger would.
package main
