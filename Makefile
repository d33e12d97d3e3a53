# krply — build and test entry points. `make test` is what CI runs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

GO ?= go
# The core module is built and tested on its own requirements (GOWORK=off), as those who go get it build it; the nested
# modules through the committed go.work (WORKSPACE), which resolves the krply modules they require to the folders here.
export GOWORK = off
WORKSPACE := GOWORK=$(CURDIR)/go.work
# Packages with goroutines of their own; make test runs them under the race detector (and every other package without it).
# RACE is how: -race, but modernc.org's packages (SQLite and its libc, C translated to Go) compiled without checkptr, the
# unsafe.Pointer checks -race turns on everywhere: in the translated C they cost a large share of the CPU time of the
# SQLite tests and find nothing the project can fix. Every package is still instrumented for races, modernc.org's too,
# and the project's own code keeps checkptr.
RACE ?= -race -gcflags=modernc.org/...=-d=checkptr=0
RACE_PKGS ?= ./storage/... ./watch/... ./krplytest/testenv/... ./internal/reread/... ./audit/... ./materialize/... ./server/...
# Tests of RACE_PKGS that make test also runs without the race detector: volume tests, which write less under it
# (see their race_on_test.go), where the race detector's slowness hides what they check; and the tests RACE_SKIP names.
PLAIN_TOO ?= -run '^(TestLogStartsOver|TestFormatFixtures|TestCompactRandomSeeds)$$' ./storage/sqlite ./storage/memory
# Tests of RACE_PKGS that the race run skips, as PLAIN_TOO runs them: tests that call a store from one goroutine over
# long journals (the format fixtures' migrations, compaction of random journals), where the race detector has no two
# goroutines to watch and doubles their time. The conformance suite's concurrent tests keep the stores under it.
RACE_SKIP ?= ^(TestFormatFixtures|TestCompactRandomSeeds)$$
# Packages of nested modules that make test runs without the race detector: the truth test on PostgreSQL, as krplytest/truth
# in the core module (the race detector makes its long run much longer; the store's own packages run under -race); and the
# chart's tests, whose code runs in one goroutine and drives Helm (a library) and the recorder's binary (a process of its own,
# not instrumented in any case): there the race detector has nothing of krply's to watch; and the quickstart's end-to-end
# test (examples/demo, a module of its own for CEL), whose recorder, server and stores the core module tests under it.
NESTED_NO_RACE ?= github.com/krply/krply/storage/postgres/internal/pgtruth github.com/krply/krply/deploy/helm/charttest github.com/krply/krply/examples/demo
# The core module's slowest test packages, slowest first: make test starts them first (go test runs
# packages in the order given, -p at a time), so that none of them is left to run alone at the end.
SLOW_FIRST ?= ./storage/sqlite ./storage/transfer ./watch ./krplytest/truth ./internal/testing/soak ./storage ./krplytest/testenv ./deploy ./server ./materialize ./recorder ./audit

.PHONY: all test core-test check layering install-test release testbin vet fmt-check no-binaries unit race bench demo examples nested-test api api-check browser screenshots

# Nested modules (own go.mod, so their heavy dependencies stay out of the core
# module); tools/ holds build helpers, not code under test.
NESTED := $(shell find . -mindepth 2 -name go.mod -not -path './tools/*' -exec dirname {} \; | sort)

all: test

## testbin: build kube-apiserver and etcd from Go modules into the user cache (once).
testbin:
	@hack/testbin.sh >/dev/null

# The phases of make test, in order (hack/phases.sh prints each one's time at the end); a+b runs a and b at the same time.
TEST_PHASES ?= fmt-check no-binaries vet api-check examples+nested-test+core-test+install-test+docs-check+layering

## test: everything CI checks (TEST_CPU=1 adds each phase's CPU time and the test binaries that took the most): formatting, vet, the API record, the docs, the module layout, unit and integration tests on a real control plane, and the install test; each phase's time printed at the end.
test:
	@MAKE="$(MAKE)" TEST_CPU="$(TEST_CPU)" hack/phases.sh $(TEST_PHASES)

## core-test: the core module's tests, on the local control plane (RACE_PKGS under the race detector, the others without it).
core-test:
	@assets=$$(hack/testbin.sh | tail -n 1); \
	echo "control plane binaries: $$assets"; \
	race=$$($(GO) list $(RACE_PKGS) | sort); \
	plain=$$(comm -23 <($(GO) list ./... | sort) <(echo "$$race")); \
	slow=$$($(GO) list $(SLOW_FIRST)); \
	slowfirst() { grep -Fx -f <(echo "$$1") <<<"$$slow" || true; grep -vFx -f <(echo "$$slow") <<<"$$1" || true; }; \
	race=$$(slowfirst "$$race"); plain=$$(slowfirst "$$plain"); \
	echo "testing $$(echo "$$plain" | wc -l) packages, then $$(echo "$$race" | wc -l) under the race detector (each once)"; \
	KUBEBUILDER_ASSETS="$$assets" KRPLY_REQUIRE_TESTENV=1 $(GO) test -count=1 -timeout 45m $$plain; \
	$(GO) test -count=1 -timeout 10m $(PLAIN_TOO); \
	KUBEBUILDER_ASSETS="$$assets" KRPLY_REQUIRE_TESTENV=1 $(GO) test -count=1 $(RACE) -timeout 30m -skip '$(RACE_SKIP)' $$race

vet:
	$(GO) vet ./...

## check: the fast loop, without the control plane: formatting, vet, the API record, the docs' links, the module layout, and the core module's tests in -short mode (those that need the control plane skip: make test runs them).
check: fmt-check vet api-check layering
	$(GO) run ./tools/docscheck
	KUBEBUILDER_ASSETS= KRPLY_REQUIRE_TESTENV= $(GO) test -short -count=1 ./...

## layering: fail when a module has a replace directive to a folder, a module imports another module's internal/ package, or a package imports one above it in the layer stack (tools/release/layout_test.go).
layering:
	cd tools/release && $(GO) test -count=1 -run '^TestLayout' .

## install-test: release HEAD for a test version in a temporary clone and install it as a stranger would: go install, go get, krew, Helm (tools/release/install_test.go).
install-test:
	cd tools/release && $(GO) test -count=1 -timeout 30m -run '^TestInstall$$' -v .

## release: make release VERSION=vX.Y.Z [DIST=dist]: check the tree, set every module's requirements to VERSION, tag every published module, and write the plugin's archives, checksums, krew manifest, packaged Helm chart, its index and the image's build arguments to DIST (tools/release); it never pushes.
DIST ?= dist
release:
	@[[ -n "$(VERSION)" ]] || { echo "give the version: make release VERSION=vX.Y.Z"; exit 2; }
	cd tools/release && $(GO) run . -repo "$(CURDIR)" -version "$(VERSION)" -dist "$(abspath $(DIST))"

## docs-check: fail when a relative link in a Markdown file points at a missing file or heading, or the generated reference (docs/reference/metrics.md, docs/reference/cli/) is stale.
docs-check: ; @hack/docs-check.sh

## no-binaries: fail when a tracked file is an executable built by go build, or larger than 2 MB (a binary built in a command's folder and committed by mistake).
no-binaries:
	@bad=$$(git ls-files -z | while IFS= read -r -d '' f; do \
		[[ -f "$$f" ]] || continue; \
		if [[ "$$(LC_ALL=C head -c 4 "$$f" | tr -d '\0')" == $$'\x7fELF' || $$(stat -c %s "$$f") -gt 2000000 ]]; then echo "$$f"; fi; \
	done); \
	if [[ -n "$$bad" ]]; then echo "tracked binaries or files over 2 MB (git rm --cached them; .gitignore lists build outputs):"; echo "$$bad"; exit 1; fi

fmt-check:
	@bad=$$(gofmt -l $$(git ls-files '*.go')); \
	if [[ -n "$$bad" ]]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi

## api: write the record of the exported API (api/krply.txt) after a deliberate API change; commit it with the change.
api:
	$(GO) run ./tools/apicheck -w

## api-check: fail when the exported API differs from api/krply.txt (printing the difference) or an option constructor is exercised by no test or example.
api-check:
	$(GO) run ./tools/apicheck

## bench: the benchmark set of docs/performance.md in one run: prints its table with the machine's load and rewrites it there (tens of minutes; BENCH_RELIST_150K=0 skips the 150,000-object relist).
bench:
	@hack/bench.sh

## demo: the quickstart: a local control plane, a workload with an outage, and what krply makes of it.
demo:
	@hack/demo.sh

## examples: build every example and every nested module (build and vet), and run the testing example's test.
examples:
	$(GO) build ./examples/...
	@for mod in $(NESTED); do \
		echo "building $$mod"; (cd "$$mod" && export $(WORKSPACE) && $(GO) build ./... && $(GO) vet ./...); \
	done
	$(GO) test -count=1 ./examples/testing/

## browser: find Chromium for the web UI's browser tests, installing Debian's chromium package when it is missing (hack/chromium.sh).
browser:
	@hack/chromium.sh >/dev/null

## nested-test: the tests of every nested module (under the race detector but NESTED_NO_RACE), on the local control plane, a local PostgreSQL (hack/postgres.sh installs it when missing) and Chromium: missing programs fail them instead of skipping them.
nested-test: browser
	@export KUBEBUILDER_ASSETS=$$(hack/testbin.sh | tail -n 1) KRPLY_REQUIRE_TESTENV=1 KRPLY_PG_BIN=$$(hack/postgres.sh | tail -n 1); \
	$(MAKE) --no-print-directory -k -j $(NESTED_JOBS) --output-sync=target $(NESTED_RUNS)

# The runs of nested-test, NESTED_JOBS at a time (each a go test, its output printed when it ends): every module's
# packages under the race detector (nested-race/<module>), its NESTED_NO_RACE packages without it (nested-plain/<module>)
# and its NESTED_PLAIN_TESTS without it (nested-some/<module>), the modules of NESTED_SLOW_FIRST first and in its order, so that the longest
# runs start at once and the others fill in beside them. (Three at a time took more CPU and more time: three runs on
# PostgreSQL at once contend.)
NESTED_JOBS ?= 2
NESTED_SLOW_FIRST ?= ./storage/postgres ./cmd/kubectl-krply ./server/ui/browsertest
NESTED_RUNS := $(foreach mod,$(foreach m,$(NESTED_SLOW_FIRST),$(filter $(m),$(NESTED))) $(filter-out $(NESTED_SLOW_FIRST),$(NESTED)),nested-race/$(mod:./%=%) nested-plain/$(mod:./%=%) nested-some/$(mod:./%=%))

# Tests of the nested modules' race packages that nested-test runs without the race detector instead, in nested-some (the
# race runs skip them), in the packages NESTED_PLAIN_PKGS: the PostgreSQL conformance suite on narrow partitions. It runs
# the Go code the suite on the default layout runs under the race detector, concurrent appends creating partitions
# included, with other SQL: the race detector has nothing more to watch there, and would double its time.
NESTED_PLAIN_TESTS ?= ^TestConformancePartitioned$$
NESTED_PLAIN_PKGS ?= github.com/krply/krply/storage/postgres

nested-race/%:
	@cd $* && export $(WORKSPACE) && race=$$(comm -23 <($(GO) list ./... | sort) <(printf '%s\n' $(NESTED_NO_RACE) | sort)) && \
	if [[ -n "$$race" ]]; then echo "testing $* under the race detector"; $(GO) test -count=1 $(RACE) -timeout 30m -skip '$(NESTED_PLAIN_TESTS)' $$race; fi

nested-plain/%:
	@cd $* && export $(WORKSPACE) && plain=$$(comm -12 <($(GO) list ./... | sort) <(printf '%s\n' $(NESTED_NO_RACE) | sort)) && \
	if [[ -n "$$plain" ]]; then echo "testing $* without the race detector:" $$plain; $(GO) test -count=1 -timeout 30m $$plain; fi

nested-some/%:
	@cd $* && export $(WORKSPACE) && some=$$(comm -12 <($(GO) list ./... | sort) <(printf '%s\n' $(NESTED_PLAIN_PKGS) | sort)) && \
	if [[ -n "$$some" ]]; then echo "testing $* without the race detector: $(NESTED_PLAIN_TESTS) of" $$some; \
		$(GO) test -count=1 -timeout 30m -run '$(NESTED_PLAIN_TESTS)' $$some; fi

## truth-soak: the long form of the history-truth test (>= 10,000 operations, >= 20 faults, a real control plane); KRPLY_TRUTH_SEED=n repeats a run.
.PHONY: truth-soak
truth-soak:
	@assets=$$(hack/testbin.sh | tail -n 1); \
	KUBEBUILDER_ASSETS="$$assets" KRPLY_REQUIRE_TESTENV=1 KRPLY_TRUTH_LONG=1 $(GO) test -count=1 -timeout 60m -run '^TestTruth$$' -v ./krplytest/truth/

## truth-loop: the truth test of each backend again and again with fresh seeds and a CPU hog beside it (TRUTH_RUNS=50 of each; TRUTH_BACKENDS="sqlite pg"); prints every run's seed and outcome, keeps failed runs' output, fails when any run failed (hack/truth-loop.sh).
.PHONY: truth-loop
truth-loop: ; @hack/truth-loop.sh

## soak: the recorder as operators run it (every resource, retention at 4 MiB, /metrics) against the local control plane with a steady workload for 10 minutes; prints RSS, disk and gaps every 10s and fails if memory grows, the disk is not bounded or a gap appears.
.PHONY: soak
soak:
	@assets=$$(hack/testbin.sh | tail -n 1); \
	KUBEBUILDER_ASSETS="$$assets" KRPLY_REQUIRE_TESTENV=1 KRPLY_SOAK_DURATION=10m $(GO) test -count=1 -timeout 20m -run '^TestSoak$$' -v ./internal/testing/soak/

## migration-soak: a recorder migrates a journal of 1,000,000 events of an older schema while probed as the kubelet probes it, and is never declared dead (recorder.TestMigrationUnderProbes; make test runs it with 20,000 events).
.PHONY: migration-soak
migration-soak:
	@assets=$$(hack/testbin.sh | tail -n 1); \
	KUBEBUILDER_ASSETS="$$assets" KRPLY_REQUIRE_TESTENV=1 KRPLY_MIGRATION_EVENTS=1000000 $(GO) test -count=1 -timeout 30m -run '^TestMigrationUnderProbes$$' -v ./recorder/

## screenshots: a PNG of every view of the web UI, on a journal recorded from the local control plane, into docs/screenshots.
screenshots: browser
	@assets=$$(hack/testbin.sh | tail -n 1); \
	cd server/ui/browsertest && export $(WORKSPACE) && KUBEBUILDER_ASSETS="$$assets" KRPLY_REQUIRE_TESTENV=1 KRPLY_SCREENSHOTS="$(CURDIR)/docs/screenshots" \
		$(GO) test -count=1 -timeout 15m -run '^TestUI$$' .
