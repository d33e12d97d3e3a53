// Package faultproxy is a fault-injecting TLS reverse proxy for tests that
// must prove a Kubernetes client survives what real clusters do to it:
// watches that are cut or end, 410 Gone, 403 Forbidden, 404 for a vanished
// resource type, 429 throttling, 500s, slow answers.
//
// A test puts a Proxy in front of an apiserver, points its client at the
// proxy, and tells the proxy what to do to upcoming requests:
//
//	env := testenv.Shared(t)
//	p := faultproxy.Start(t, env.Config())
//	dyn, err := dynamic.NewForConfig(p.Config()) // everything goes through p
//
//	cms := faultproxy.Match{Resource: "configmaps"}
//	p.WaitForWatches(ctx, faultproxy.Match{Verb: "watch", Resource: "configmaps"}, 1)
//	p.CutWatches(cms)                                               // network failure
//	p.FailNext(1, faultproxy.Match{Verb: "watch", Resource: "configmaps"}, faultproxy.WatchError(410))
//	p.FailNext(1, faultproxy.Match{Verb: "list", Resource: "configmaps"}, faultproxy.Status(410))
//	p.FailNext(3, cms, faultproxy.Status(403))
//	p.StallWatches(cms)                                             // a half-open connection
//	p.SetLatency(200 * time.Millisecond)
//	if p.Count(faultproxy.Match{Verb: "list", Resource: "configmaps"}) != 2 { … }
//
// # The two forms of 410
//
// A real apiserver reports an expired resourceVersion to a watch as HTTP 200
// followed by one ERROR event carrying a Status with code 410 and reason
// Expired (WatchError(410)); a list with an expired resourceVersion fails
// with HTTP 410, reason Expired, for which apierrors.IsResourceExpired is
// true and apierrors.IsGone false (Status(410)). Status(410) on a watch gives
// the HTTP form, which older or aggregated servers send.
//
// # What a client sees
//
// CutWatches resets the stream. client-go's watch then delivers an ERROR
// event carrying a 500 InternalError Status with cause ClientWatchDecoding
// ("unable to decode an event from the watch stream: stream error …") and
// closes its result channel. EndWatches ends the stream cleanly: the result
// channel closes without an event, as when the apiserver's watch timeout
// expires. Neither is a 410: the client should reconnect from its last
// resourceVersion, and no gap is lost. StallWatches leaves the stream open
// and silent — nothing the apiserver sends gets through, not even the end
// of the stream at its timeout — as a half-open connection does, until the
// client gives up.
//
// # What it does not do
//
// Only faults a test plans are injected; everything else is forwarded
// unchanged, watch events as soon as they arrive. Credentials in headers
// (bearer tokens, impersonation) pass through, so Wrap keeps a limited
// user limited; TLS client certificates do not — the proxy connects with the
// upstream config's own TLS settings. When the apiserver cannot be reached
// (during a restart, say), the proxy answers 503 with a Status, where a
// direct client would see a refused connection.
//
// A Proxy is safe for concurrent use. Close it (Start does so at the end of
// the test); Close aborts open watches.
package faultproxy
