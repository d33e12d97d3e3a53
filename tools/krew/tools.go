// Package krew holds nothing: its module pins krew's own tools
// (validate-krew-manifest and krew), which the install test of
// tools/release runs on the release's krew manifest. They live in a module
// of their own so that krew's dependencies meet no other module's.
package krew
