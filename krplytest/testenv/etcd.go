package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// etcd is the single-member etcd of an Env, on loopback, without TLS. The
// harness talks to it through etcd's gRPC gateway (JSON over HTTP), which
// keeps the etcd client library out of the core module.
type etcd struct {
	proc *process
	url  string // client URL, http://127.0.0.1:port
}

func startEtcd(ctx context.Context, binary, dir string) (*etcd, error) {
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		e := &etcd{
			url: clientURL,
			proc: &process{
				name: "etcd",
				path: binary,
				args: []string{
					"--name=krply-testenv",
					"--data-dir=" + filepath.Join(dir, "etcd-data"),
					"--listen-client-urls=" + clientURL,
					"--advertise-client-urls=" + clientURL,
					"--listen-peer-urls=" + peerURL,
					"--initial-advertise-peer-urls=" + peerURL,
					"--initial-cluster=krply-testenv=" + peerURL,
					// Tests never need durability, and fsync dominates write latency.
					"--unsafe-no-fsync=true",
					"--log-level=warn",
				},
				logPath: filepath.Join(dir, "etcd.log"),
			},
		}
		if err := e.proc.start(); err != nil {
			return nil, err
		}
		err = waitFor(ctx, e.proc, func(ctx context.Context) error { return e.healthy(ctx) })
		if err == nil {
			return e, nil
		}
		e.proc.stop()
		lastErr = err
		if !errors.Is(err, errExited) || !e.proc.portInUse() {
			return nil, err
		}
	}
	return nil, lastErr
}

func (e *etcd) healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var health struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		return fmt.Errorf("etcd /health: %w", err)
	}
	if health.Health != "true" {
		return fmt.Errorf("etcd /health: %q", health.Health)
	}
	return nil
}

// gatewayError is an error answer of the etcd gRPC gateway.
type gatewayError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *gatewayError) Error() string {
	return fmt.Sprintf("etcd: %s (gRPC code %d)", e.Message, e.Code)
}

// call posts a JSON request to the etcd gRPC gateway and decodes the answer.
func (e *etcd) call(ctx context.Context, path string, request, response any) error {
	body, err := json.Marshal(request)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		gwErr := &gatewayError{}
		if json.Unmarshal(data, gwErr) == nil && gwErr.Message != "" {
			return fmt.Errorf("etcd %s: %w", path, gwErr)
		}
		return fmt.Errorf("etcd %s: HTTP %d: %s", path, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, response); err != nil {
		return fmt.Errorf("etcd %s: decode %q: %w", path, data, err)
	}
	return nil
}

type responseHeader struct {
	Header struct {
		// proto3 JSON encodes int64 as a string.
		Revision string `json:"revision"`
	} `json:"header"`
}

// revision returns etcd's current revision.
func (e *etcd) revision(ctx context.Context) (int64, error) {
	var resp responseHeader
	// Any range answers with the store's current revision in its header.
	if err := e.call(ctx, "/v3/kv/range", map[string]any{"key": "AA==", "limit": 1, "keys_only": true}, &resp); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(resp.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd: revision %q: %w", resp.Header.Revision, err)
	}
	return rev, nil
}

// compact compacts etcd's history up to its current revision and waits until
// the compaction is physically applied.
func (e *etcd) compact(ctx context.Context) (int64, error) {
	rev, err := e.revision(ctx)
	if err != nil {
		return 0, err
	}
	var resp responseHeader
	err = e.call(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, &resp)
	var gwErr *gatewayError
	if errors.As(err, &gwErr) && strings.Contains(gwErr.Message, "required revision has been compacted") {
		// Already compacted up to the current revision: nothing older is left.
		return rev, nil
	}
	if err != nil {
		return 0, err
	}
	return rev, nil
}

// waitFor polls ready until it succeeds, ctx ends, or proc exits.
func waitFor(ctx context.Context, proc *process, ready func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		lastErr = ready(attemptCtx)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-proc.done:
			return proc.exitError()
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s not ready: %w (last check: %v); last log lines of %s:\n%s",
				proc.name, ctx.Err(), lastErr, proc.logPath, proc.logTail(30))
		case <-tick.C:
		}
	}
}
