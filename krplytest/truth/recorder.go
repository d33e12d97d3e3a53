package truth

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

// childEnv names the file that configures a child process recording with a
// Collector until it is killed (see runChild).
const childEnv = "KRPLY_TRUTH_CHILD"

// childConfig is what a recording child needs.
type childConfig struct {
	Journal    string   `json:"journal"`
	Host       string   `json:"host"`
	Token      string   `json:"token"`
	CAData     []byte   `json:"caData"`
	Namespaces []string `json:"namespaces"`
	// ListOnly takes baselines with paginated lists, never a WatchList,
	// so a delay of the list requests holds a baseline open between pages.
	ListOnly bool `json:"listOnly,omitempty"`
}

func (c childConfig) restConfig() *rest.Config {
	return &rest.Config{Host: c.Host, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData}, QPS: -1}
}

const clusterID = "truth"

// collectorOptions are the options of every recorder, in process or not.
func collectorOptions(namespaces []string, log logr.Logger) []watch.Option {
	return []watch.Option{
		watch.WithClusterID(clusterID),
		watch.WithResources("configmaps", "secrets", "services", "deployments.apps"),
		watch.WithNamespaces(namespaces...),
		watch.AllowSecrets(), watch.KeepSecretValues(), // test data: bodies are compared with the server's
		watch.WithBackoff(20*time.Millisecond, 500*time.Millisecond),
		watch.WithPageSize(pageSize), // a baseline of the bulk namespace's ConfigMaps takes several pages
		// A quiet stream's evidence advances every few seconds, not the
		// default ten: waiting for progress stays short, and every watch
		// ends at its timeout (the interval less a second) and resumes
		// many times in a run, faults or not.
		watch.WithProgressInterval(progressInterval),
		watch.WithRediscoveryInterval(0),
		watch.WithLogger(log),
	}
}

// pageSize is the page size of every recorder's baseline lists, and
// progressInterval how often their streams' evidence advances while quiet.
const (
	pageSize         = 15
	progressInterval = 4 * time.Second
)

// fileLogger writes log lines to w.
func fileLogger(w io.Writer, name string) logr.Logger {
	var mu sync.Mutex
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, time.Now().UTC().Format("15:04:05.000000"), name, prefix, args)
	}, funcr.Options{Verbosity: 1})
}

// runChild records with a Collector on the journal until the process is
// killed; it prints "opened" once it opened the journal and "synced" once
// every stream has a baseline or resumed.
func runChild(b Backend, configPath string) int {
	var cfg childConfig
	if err := readConfig(configPath, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	st, err := b.Open(ctx, cfg.Journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	fmt.Println("opened")
	opts := collectorOptions(cfg.Namespaces, fileLogger(os.Stderr, "child"))
	if cfg.ListOnly {
		opts = append(opts, watch.WithWatchList(watch.WatchListOff))
	}
	c, err := watch.NewCollectorForConfig(cfg.restConfig(), st, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	if err := c.WaitForSync(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "wait for sync:", err)
		return 2
	}
	fmt.Println("synced")
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "collector:", err)
		return 1
	}
	return 0
}

// recorder is a Collector recording into the journal, in this process or in
// a child process.
type recorder struct {
	// in process: exited is closed when Start returned err
	store     storage.Store
	collector *watch.Collector
	cancel    context.CancelFunc
	exited    chan struct{}
	err       error
	// child process
	cmd *exec.Cmd
}

// startInProcess opens the journal and records into it until stop.
func startInProcess(ctx context.Context, b Backend, cfg *rest.Config, journal string, namespaces []string, log logr.Logger) (*recorder, error) {
	st, err := b.Open(ctx, journal)
	if err != nil {
		return nil, err
	}
	c, err := watch.NewCollectorForConfig(cfg, st, collectorOptions(namespaces, log)...)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &recorder{store: st, collector: c, cancel: cancel, exited: make(chan struct{})}
	go func() {
		r.err = c.Start(runCtx)
		close(r.exited)
	}()
	syncCtx, cancelSync := watchdog(ctx, "the Collector to sync", func() string { return collectorState(c) })
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		err = causeOf(syncCtx, err)
		var states []string
		for _, s := range c.Status() {
			states = append(states, fmt.Sprintf("%s: %s %s", s.StreamID, s.State, s.DegradedReason))
		}
		_ = r.stop()
		return nil, fmt.Errorf("wait for sync: %w; streams: %s", err, strings.Join(states, "; "))
	}
	return r, nil
}

// startChild re-executes the test binary as a child that records into the
// journal until it is killed. It returns once the child synced, or, when
// synced is false, once it opened the journal.
func startChild(ctx context.Context, cfg childConfig, dir string, logs io.Writer, synced bool) (*recorder, error) {
	want := "opened"
	if synced {
		want = "synced"
	}
	cmd, err := reexec(ctx, childEnv, cfg, filepath.Join(dir, "child.json"), logs, want)
	if err != nil {
		return nil, fmt.Errorf("recording child: %w", err)
	}
	return &recorder{cmd: cmd}, nil
}

// reexec starts the test binary again as a child process that runs what
// env names, with cfg written as JSON to path (readConfig reads it), and
// returns once the child printed the line ready. On an error the child is
// killed.
func reexec(ctx context.Context, env string, cfg any, path string, logs io.Writer, ready string) (*exec.Cmd, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+path)
	cmd.SysProcAttr = childAttr()
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	printed := make(chan error, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.TrimSpace(s.Text()) == ready {
				printed <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		printed <- fmt.Errorf("exited before it printed %q", ready)
	}()
	select {
	case err = <-printed:
	case <-time.After(scaled(stallTimeout)):
		err = fmt.Errorf("did not print %q within %v (%s=<factor> scales the waits)", ready, scaled(stallTimeout), patienceEnv)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return cmd, nil
}

// readConfig reads the configuration reexec wrote for a child.
func readConfig(path string, cfg any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, cfg)
}

// stop ends an in-process recorder cleanly and closes the journal.
func (r *recorder) stop() error {
	r.cancel()
	<-r.exited
	err := r.err
	if cerr := r.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// failed returns why an in-process recorder stopped by itself, or nil while
// it records.
func (r *recorder) failed() error {
	select {
	case <-r.exited:
		if r.err == nil {
			return errors.New("the Collector's Start returned nil before it was stopped")
		}
		return r.err
	default:
		return nil
	}
}

// kill ends a child with SIGKILL: whatever it had not committed is lost.
// It fails when the child had already exited by itself: a recorder that
// fails while others use the journal breaks the promise too.
func (r *recorder) kill() error {
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return err
	}
	if ws, ok := exit.Sys().(interface{ Signaled() bool }); ok && !ws.Signaled() {
		return fmt.Errorf("the recording child exited by itself before it was killed (%v; its log is in the collector log)", exit)
	}
	return nil // killed, as intended
}
