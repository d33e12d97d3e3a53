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

	"github.com/krply/krply/storage/sqlite"
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
		watch.WithRediscoveryInterval(0),
		watch.WithLogger(log),
	}
}

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
// killed; it prints "synced" once every stream has a baseline or resumed.
func runChild(configPath string) int {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var cfg childConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	st, err := sqlite.Open(ctx, cfg.Journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	c, err := watch.NewCollectorForConfig(cfg.restConfig(), st, collectorOptions(cfg.Namespaces, fileLogger(os.Stderr, "child"))...)
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
	// in process
	store  *sqlite.Store
	cancel context.CancelFunc
	done   chan error
	// child process
	cmd *exec.Cmd
}

// startInProcess opens the journal and records into it until stop.
func startInProcess(ctx context.Context, cfg *rest.Config, journal string, namespaces []string, log logr.Logger) (*recorder, error) {
	st, err := sqlite.Open(ctx, journal)
	if err != nil {
		return nil, err
	}
	c, err := watch.NewCollectorForConfig(cfg, st, collectorOptions(namespaces, log)...)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &recorder{store: st, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Start(runCtx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
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
// journal until it is killed.
func startChild(ctx context.Context, cfg childConfig, dir string, logs io.Writer) (*recorder, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "child.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.SysProcAttr = childAttr()
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &recorder{cmd: cmd}
	synced := make(chan error, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.TrimSpace(s.Text()) == "synced" {
				synced <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		synced <- errors.New("child exited before it synced")
	}()
	select {
	case err = <-synced:
	case <-time.After(time.Minute):
		err = errors.New("child did not sync within a minute")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = r.kill()
		return nil, err
	}
	return r, nil
}

// stop ends an in-process recorder cleanly and closes the journal.
func (r *recorder) stop() error {
	r.cancel()
	err := <-r.done
	if cerr := r.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// kill ends a child with SIGKILL: whatever it had not committed is lost.
func (r *recorder) kill() error {
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // killed, as intended
	}
	return err
}
