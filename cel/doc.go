// Package cel compiles CEL expressions — the Common Expression Language
// that Kubernetes uses in admission policies and CRD validation — into
// krply's conditions: an expression over `object`, an object's version as
// the journal recorded it, becomes a materialize.Predicate for
// Materializer.Find.
//
// It lives in a module of its own (github.com/krply/krply/cel) so that
// embedding krply does not pull CEL's dependencies in; the query server
// and the kubectl plugin take it by injection.
//
// # Guarantees
//
//   - An expression is parsed, type-checked and planned once (Compile);
//     each request gets its own Predicate with its own cost budget.
//   - Cost is bounded three ways, as Kubernetes bounds it: Compile refuses
//     an expression whose estimated worst-case cost on one version is out
//     of bounds (comprehensions nested in comprehensions), each evaluation
//     stops at a per-version limit,
//     and a Predicate stops the request once its evaluations together
//     exceed the budget (ErrBudgetExceeded).
//   - A compile error is a *CompileError with the line, the column and a
//     hint; it wraps materialize.ErrInvalidArgument.
//   - An expression that fails on one version (a missing field, a type
//     mismatch) fails with materialize.ErrEvaluation, which Find counts as
//     "not true" with a warning.
//
// # Does not
//
// It offers CEL's standard library and cel-go's extensions (strings,
// lists, sets, math, regex, two-variable comprehensions, encoders,
// network addresses); it does not offer the Kubernetes-only libraries of
// k8s.io/apiserver (quantity, format, authorizer), which would bring the
// API server's module in.
//
// # Cost of an evaluation
//
// Of each version, a Predicate decodes only what its expression reads of
// `object`: the fields of the chains of field selections that start at
// it, each chain's last value whole (see projectionOf); an expression
// that uses `object` any other way decodes all of it. The answers are
// those of decoding all of it (TestProjectedMatchesWhole,
// FuzzDecodeProjected). A Predicate keeps the answer for each projection
// it evaluated (up to a bound per request) and answers a version whose
// projection is the same without evaluating it, or spending its budget:
// the fields a condition reads mostly take few values across a journal.
// When they hardly repeat, it stops keeping.
//
// # Concurrency
//
// An Expression is safe for concurrent use, and so is a Predicate
// (materialize.ConcurrentPredicate): the evaluations of one request, which
// Find runs side by side, share its budget.
package cel
