// Package replayapi holds the data types of a replay: the Plan with its
// Source, Target, Policy, Coverage, Objects and Exclusions, the
// DryRunReport and ApplyReport, the Confirmation that consents to an apply,
// and a cluster's Identity. They are what the journal keeps of a replay and
// what the query API (server/apiv1) sends.
//
// The replay package makes, dry-runs and applies plans; it re-exports every
// name here as an alias (replay.Plan is replayapi.Plan), so code that uses
// replay needs nothing from this package. This package exists for code
// that only reads or shows plans and reports — the server's Go client
// above all — and must not link replay's dry-run and apply path, which
// brings client-go's dynamic and rest clients with it. It follows
// client-go's tools/clientcmd/api, which holds the kubeconfig types apart
// from the code that loads and uses them.
//
// # Guarantees
//
// It imports nothing of krply's above materialize (tools/release's layering
// test checks that) and no client-go package; server/client's deps test
// fails when client-go's dynamic or rest client, or replay, comes in. A type's
// JSON is a promise (docs/reference/wire-schema.md): a saved plan's Hash
// covers its JSON, so a field is only ever added, omitted when zero, and
// never renamed. Plan.ComputeHash, Plan.JSON and Plan.YAML need no cluster
// and no journal.
//
// # What it does not do
//
// It does not make, check, save, dry-run or apply a plan: replay.Planner
// does. Parsing a saved plan with its hash checked is replay.ParsePlan,
// since a mismatch is replay's *StalePlanError.
//
// # Concurrency and Close
//
// The types are plain values: safe to read from many goroutines, not to
// change while others read. Nothing here needs Close.
package replayapi
