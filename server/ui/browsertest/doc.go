// Package browsertest tests krply's web UI in a real headless Chromium,
// driven through the DevTools protocol (chromedp), against a journal
// recorded from a real control plane with an outage in it. It is a module
// of its own so that chromedp stays out of krply's core module.
//
// The browser comes from hack/chromium.sh (Debian's chromium package,
// installed when missing); KRPLY_CHROMIUM names another. Without a browser
// the tests fail with the fix, except under a plain `go test` without
// KRPLY_REQUIRE_TESTENV, where they skip as the control plane tests do.
//
// `make screenshots` runs TestScreenshots with KRPLY_SCREENSHOTS set to a
// folder: it writes a PNG of every view there (docs/screenshots).
package browsertest
