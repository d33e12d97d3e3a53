package faultproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/krply/krply/krplytest/testenv/internal/pki"
)

// TB is the part of testing.TB that Start uses.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Proxy is a TLS reverse proxy in front of one apiserver that injects faults
// on command. Its methods are safe for concurrent use.
type Proxy struct {
	config    *rest.Config // the upstream config, credentials included
	upstream  *url.URL
	transport http.RoundTripper
	caPEM     []byte
	host      string
	listener  net.Listener
	server    *http.Server
	proxy     *httputil.ReverseProxy

	mu       sync.Mutex
	latency  time.Duration
	faults   []*plannedFault
	requests []Request
	watches  map[*openWatch]struct{}
	closed   bool
}

type plannedFault struct {
	match     Match
	fault     Fault
	remaining int // < 0: until ClearFaults
}

// openWatch is a watch request being forwarded.
type openWatch struct {
	req         Request
	ctx         context.Context // ends when the client goes away or the proxy stops the watch
	cancel      context.CancelFunc
	established bool // the apiserver answered 200: the watch is registered
	end         bool // when cancelled, end the stream cleanly instead of aborting
	stalled     bool // drop everything from the apiserver (StallWatches)
}

type watchKey struct{}

// New starts a proxy on a free loopback port that forwards to the apiserver
// upstream describes. The proxy connects with upstream's TLS settings
// (CA, client certificate) but not its credentials: each client's own
// Authorization header (bearer token) is passed through, so a config for a
// limited user stays limited through the proxy (see Wrap). Close stops it.
func New(upstream *rest.Config) (*Proxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("faultproxy: upstream host %q: not a URL", upstream.Host)
	}
	if target.Scheme == "" {
		target.Scheme = "https"
	}
	tlsOnly := rest.CopyConfig(upstream)
	tlsOnly.BearerToken, tlsOnly.BearerTokenFile = "", ""
	tlsOnly.Username, tlsOnly.Password = "", ""
	tlsOnly.AuthProvider, tlsOnly.ExecProvider = nil, nil
	tlsOnly.Impersonate = rest.ImpersonationConfig{}
	tlsOnly.WrapTransport = nil
	transport, err := rest.TransportFor(tlsOnly)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: upstream transport: %w", err)
	}

	ca, err := pki.NewCA("krply-faultproxy-ca")
	if err != nil {
		return nil, err
	}
	serving, err := ca.NewServingCert("krply-faultproxy")
	if err != nil {
		return nil, err
	}
	cert, err := serving.TLSCertificate()
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		config:    rest.CopyConfig(upstream),
		upstream:  target,
		transport: transport,
		caPEM:     ca.CertPEM,
		host:      "https://" + listener.Addr().String(),
		listener:  listener,
		watches:   map[*openWatch]struct{}{},
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:      transport,
		FlushInterval:  -1, // watch events pass through at once
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       discardLogger,
	}
	p.server = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          discardLogger,
	}
	go func() { _ = p.server.ServeTLS(listener, "", "") }()
	return p, nil
}

// Start is New for tests: it fails t on error and closes the proxy when t's
// test ends.
func Start(t TB, upstream *rest.Config) *Proxy {
	t.Helper()
	p, err := New(upstream)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Host is the proxy's URL, https://127.0.0.1:<port>.
func (p *Proxy) Host() string { return p.host }

// Config returns a new rest.Config that reaches the upstream apiserver
// through the proxy with the credentials of the config New was given.
func (p *Proxy) Config() *rest.Config { return p.Wrap(p.config) }

// Wrap returns a copy of cfg (a config for the upstream apiserver, of any
// user) that goes through the proxy: the host and the CA change, the
// credentials stay.
func (p *Proxy) Wrap(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = p.host
	c.APIPath = cfg.APIPath
	c.TLSClientConfig.CAData = slices.Clone(p.caPEM)
	c.TLSClientConfig.CAFile = ""
	c.TLSClientConfig.Insecure = false
	c.TLSClientConfig.ServerName = ""
	return c
}

// FailNext injects fault into the next n requests that m selects (n < 0:
// every one until ClearFaults). Faults planned earlier are consulted first;
// a request gets at most one fault. For example, to make the next two
// watches of ConfigMaps end with 410 Gone as a real apiserver reports it:
//
//	p.FailNext(2, faultproxy.Match{Verb: "watch", Resource: "configmaps"}, faultproxy.WatchError(410))
func (p *Proxy) FailNext(n int, m Match, fault Fault) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &plannedFault{match: m, fault: fault, remaining: n})
}

// ClearFaults forgets every planned fault that has not fired yet.
func (p *Proxy) ClearFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// PendingFaults returns how many planned injections have not fired yet (an
// unlimited fault counts once).
func (p *Proxy) PendingFaults() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.faults {
		if f.remaining < 0 {
			n++
		} else {
			n += f.remaining
		}
	}
	return n
}

// SetLatency delays every request by d before it is forwarded (0: none).
// Requests already waiting keep their delay.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// CutWatches aborts every open watch stream that m selects, as a network
// failure would: the client sees a transport error (a reset HTTP/2 stream),
// and the apiserver sees the client go away. It returns how many it cut.
func (p *Proxy) CutWatches(m Match) int { return p.stopWatches(m, false) }

// EndWatches ends every open watch stream that m selects cleanly, as the
// apiserver does when a watch reaches its timeout: the client sees the end of
// the stream (its watch's result channel closes) without an error. It
// returns how many it ended.
func (p *Proxy) EndWatches(m Match) int { return p.stopWatches(m, true) }

// StallWatches makes every open watch stream that m selects go silent, as
// a half-open connection does: from now on nothing the apiserver sends
// reaches the client — no event, no bookmark, not the end of the stream at
// its timeout — and the stream stays open until the client gives up (or
// CutWatches, EndWatches or Close ends it). Watches opened later are not
// affected. It returns how many it stalled.
func (p *Proxy) StallWatches(m Match) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for w := range p.watches {
		if m.Matches(w.req) && !w.stalled {
			w.stalled = true
			n++
		}
	}
	return n
}

func (p *Proxy) stopWatches(m Match, end bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for w := range p.watches {
		if m.Matches(w.req) {
			w.end = end
			w.cancel()
			delete(p.watches, w)
			n++
		}
	}
	return n
}

// OpenWatches returns how many watch streams that m selects are open: the
// apiserver has accepted them (answered 200), so an object changed from now
// on reaches them.
func (p *Proxy) OpenWatches(m Match) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for w := range p.watches {
		if w.established && m.Matches(w.req) {
			n++
		}
	}
	return n
}

// WaitForWatches waits until at least n watch streams that m selects are
// open (see OpenWatches), or ctx ends.
func (p *Proxy) WaitForWatches(ctx context.Context, m Match, n int) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if got := p.OpenWatches(m); got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("faultproxy: waiting for %d open watches (%s): %d open: %w", n, m, p.OpenWatches(m), ctx.Err())
		case <-tick.C:
		}
	}
}

// Count returns how many requests that m selects the proxy has received
// since it started or since ResetCounts, failed ones included.
func (p *Proxy) Count(m Match) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.requests {
		if m.Matches(r) {
			n++
		}
	}
	return n
}

// Requests returns the requests that m selects, in arrival order, since the
// proxy started or since ResetCounts.
func (p *Proxy) Requests(m Match) []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Request
	for _, r := range p.requests {
		if m.Matches(r) {
			out = append(out, r)
		}
	}
	return out
}

// ResetCounts forgets the requests received so far.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = nil
}

// Close aborts open watches and stops the proxy. It does not wait for
// requests in flight.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.CutWatches(Match{})
	err := p.server.Close()
	if t, ok := p.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return err
}

// takeFault records req and returns the fault it gets, if any.
func (p *Proxy) takeFault(req *Request) (Fault, time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	latency := p.latency
	for i, f := range p.faults {
		if !f.match.Matches(*req) {
			continue
		}
		if f.remaining > 0 {
			f.remaining--
			if f.remaining == 0 {
				p.faults = slices.Delete(p.faults, i, i+1)
			}
		}
		if f.fault.kind != faultDelay {
			req.Injected = f.fault.String()
		}
		p.requests = append(p.requests, *req)
		return f.fault, latency, true
	}
	p.requests = append(p.requests, *req)
	return Fault{}, latency, false
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	req := parseRequest(r)
	fault, latency, faulted := p.takeFault(&req)
	if faulted && fault.kind == faultDelay {
		latency += fault.delay
	}
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	if faulted {
		switch fault.kind {
		case faultStatus:
			writeStatus(w, status(fault.code, fault.retryAfter, req))
			return
		case faultWatchError:
			if req.Verb == "watch" {
				writeWatchError(w, fault.code, req)
			} else {
				writeStatus(w, status(fault.code, 0, req))
			}
			return
		case faultAbort:
			panic(http.ErrAbortHandler)
		}
	}
	if req.Verb != "watch" {
		p.proxy.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	watch := &openWatch{req: req, ctx: ctx, cancel: cancel}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	p.watches[watch] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.watches, watch)
		p.mu.Unlock()
	}()
	p.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, watchKey{}, watch)))
}

// modifyResponse marks a watch as open once the apiserver accepted it, and
// lets EndWatches end its stream cleanly.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	watch, ok := resp.Request.Context().Value(watchKey{}).(*openWatch)
	if !ok {
		return nil
	}
	p.mu.Lock()
	watch.established = resp.StatusCode == http.StatusOK
	p.mu.Unlock()
	resp.Body = &watchBody{ReadCloser: resp.Body, proxy: p, watch: watch}
	return nil
}

// watchBody turns the read error caused by EndWatches into a clean end of
// the stream; any other error (CutWatches, upstream failure) aborts the
// client's stream. A stalled stream (StallWatches) drops what it reads and,
// when the apiserver ends it, stays open until the watch's context ends.
type watchBody struct {
	io.ReadCloser
	proxy *Proxy
	watch *openWatch
}

func (b *watchBody) stalled() bool {
	b.proxy.mu.Lock()
	defer b.proxy.mu.Unlock()
	return b.watch.stalled
}

func (b *watchBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	for b.stalled() {
		if err != nil {
			<-b.watch.ctx.Done()
			n, err = 0, b.watch.ctx.Err()
			break
		}
		n, err = b.ReadCloser.Read(buf)
	}
	if err != nil && err != io.EOF {
		b.proxy.mu.Lock()
		end := b.watch.end
		b.proxy.mu.Unlock()
		if end {
			return n, io.EOF
		}
	}
	return n, err
}

// upstreamError answers when the apiserver cannot be reached (for example
// while it restarts) with 503 and a Status, as a load balancer in front of
// an apiserver would; a request the client or CutWatches cancelled is
// aborted instead.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		if watch, ok := r.Context().Value(watchKey{}).(*openWatch); ok {
			p.mu.Lock()
			end := watch.end
			p.mu.Unlock()
			if end {
				return // EndWatches before the apiserver answered: an empty answer
			}
		}
		panic(http.ErrAbortHandler)
	}
	req := parseRequest(r)
	body := status(http.StatusServiceUnavailable, 0, req)
	body.Message = fmt.Sprintf("faultproxy: apiserver unreachable: %v", err)
	writeStatus(w, body)
}

// discardLogger silences net/http's reports of the aborts this proxy causes
// on purpose.
var discardLogger = log.New(io.Discard, "", 0)
