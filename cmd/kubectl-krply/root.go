package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/replay"
)

// Exit codes.
const (
	exitOK         = 0
	exitError      = 1 // an error, a missing object included
	exitUsage      = 2 // a wrong command line
	exitIncomplete = 3 // an incomplete answer under --require-complete
)

// usageError is a wrong command line: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errIncomplete is returned after an incomplete answer was printed, under
// --require-complete: exit code 3.
var errIncomplete = errors.New("the answer is incomplete (--require-complete)")

// env is what every command shares: the streams, the global flags, and
// the source of answers.
type env struct {
	genericiooptions.IOStreams
	kube *genericclioptions.ConfigFlags

	journal         string
	server          string
	serverTimeout   time.Duration // --request-timeout, for --server
	token           string
	tokenFile       string
	clusterID       string
	requireComplete bool

	// now is the time "now" and relative times are read against; tests
	// pin it.
	now func() time.Time
	// journalFlagSet is true when --journal was given.
	journalFlagSet bool
	// planOptions are given to the replay planner (tests fix IDs and the
	// clock).
	planOptions []replay.Option
	// matOptions are given to the materializer (tests fix the clock and
	// the IDs of saved snapshots).
	matOptions []materialize.Option
	incomplete bool
}

// run runs the plugin with args and returns its exit code.
func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	return newEnv(genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}).execute(ctx, args)
}

// execute runs the command line args and returns the exit code.
func (e *env) execute(ctx context.Context, args []string) int {
	root := e.rootCommand()
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		e.journalFlagSet = cmd.Flags().Changed("journal")
	}
	root.SetArgs(args)
	root.SetIn(e.In)
	root.SetOut(e.Out)
	root.SetErr(e.ErrOut)
	err := root.ExecuteContext(ctx)
	return e.exitCode(err)
}

func newEnv(streams genericiooptions.IOStreams) *env {
	kube := genericclioptions.NewConfigFlags(true)
	// --server and --token are krply's: they name a recorder's query API.
	// The API server is chosen with --kubeconfig, --context and --cluster.
	kube.APIServer, kube.BearerToken = nil, nil
	return &env{IOStreams: streams, kube: kube, now: time.Now}
}

func (e *env) exitCode(err error) int {
	switch {
	case err == nil:
		if e.incomplete && e.requireComplete {
			fmt.Fprintln(e.ErrOut, "kubectl krply: error:", errIncomplete)
			return exitIncomplete
		}
		return exitOK
	case errors.Is(err, errIncomplete):
		fmt.Fprintln(e.ErrOut, "kubectl krply: error:", err)
		return exitIncomplete
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(e.ErrOut, "kubectl krply: interrupted")
		return exitError
	case e.server != "" && timedOut(err):
		fmt.Fprintf(e.ErrOut, "kubectl krply: error: the query API at %s did not answer within --request-timeout %s (%s); give it longer, or 0 for no limit\n", e.server, e.serverTimeout, message(err))
		return exitError
	case e.server != "" && untrusted(err):
		fmt.Fprintf(e.ErrOut, "kubectl krply: error: %s; give the certificate authority that signed the query API's certificate with --certificate-authority FILE\n", message(err))
		return exitError
	}
	fmt.Fprintln(e.ErrOut, "kubectl krply: error:", message(err))
	var u usageError
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command ") {
		fmt.Fprintln(e.ErrOut, "See 'kubectl krply --help' or 'kubectl krply COMMAND --help'.")
		return exitUsage
	}
	return exitError
}

// untrusted reports whether err is a server certificate that no root
// trusted.
func untrusted(err error) bool {
	var ua x509.UnknownAuthorityError
	return errors.As(err, &ua)
}

// timedOut reports whether err is a request that ran out of time.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (e *env) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-krply",
		Short: "Gap-aware history of Kubernetes objects: what changed, when, by whom; replay into a sandbox",
		Long: `kubectl krply answers from a krply journal: what an object looked like at
a time, what changed, when and by whom, what a namespace looked like, and
how to put it back in a sandbox. Every answer says how complete it is.

Answers come from a journal file (--journal, default $KRPLY_JOURNAL, then
./krply.db), opened read-only unless the command saves something, or from a
recorder's query API (--server URL, --token or --token-file): the same
output either way.

Times are RFC 3339 ("2026-12-01T10:04:05.123456789Z"), "now", or a duration
ago ("10m ago"); printed times have the zone and full precision, so they
can be pasted back.

Exit codes: 0 ok; 1 error (an object not found included); 2 wrong command
line; 3 an incomplete answer under --require-complete (otherwise only a
warning on stderr).`,
		Example: `  kubectl krply record --resource deploy,cm,svc -n shop
  kubectl krply history deploy/web -n shop
  kubectl krply blame deploy/web -n shop
  kubectl krply diff -n shop --from "1h ago" --to now
  kubectl krply replay plan -n shop --at "10m ago" --to-namespace shop-restore`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Help and messages name the plugin as kubectl users type it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl krply"},
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	e.kube.AddFlags(pf)
	journal := os.Getenv("KRPLY_JOURNAL")
	if journal == "" {
		journal = "krply.db"
	}
	pf.StringVar(&e.journal, "journal", journal, "path of the SQLite journal, or a PostgreSQL connection URL (postgres://user@host/db) ($KRPLY_JOURNAL, else ./krply.db)")
	pf.StringVar(&e.server, "server", "", "URL of a recorder's query API to ask instead of a journal file (kubectl krply record --listen serves one)")
	pf.StringVar(&e.token, "token", "", "bearer token for --server")
	pf.StringVar(&e.tokenFile, "token-file", "", "file holding the bearer token for --server")
	pf.StringVar(&e.clusterID, "cluster-id", "", "the journal's cluster ID (default: the only cluster the journal holds)")
	pf.BoolVar(&e.requireComplete, "require-complete", false, "exit with code 3 when an answer is incomplete (a gap, time not yet observed), instead of only warning")
	root.AddCommand(
		e.recordCommand(),
		e.statusCommand(),
		e.gapsCommand(),
		e.getCommand(),
		e.historyCommand(),
		e.whyCommand(),
		e.blameCommand(),
		e.diffCommand(),
		e.findCommand(),
		e.snapshotCommand(),
		e.replayCommand(),
		e.auditCommand(),
		e.exportCommand(),
		e.importCommand(),
		e.migrateCommand(),
		e.mcpCommand(),
		e.versionCommand(),
	)
	return root
}

// open returns the source of answers: the query API with --server, the
// journal file otherwise. writes opens the journal writable.
func (e *env) open(ctx context.Context, writes bool) (source, error) {
	if e.server != "" {
		if e.kube != nil && e.journalFlagSet {
			return nil, usagef("give --journal or --server, not both")
		}
		return openServer(e)
	}
	if e.token != "" || e.tokenFile != "" {
		return nil, usagef("--token and --token-file go with --server")
	}
	src, err := openJournal(ctx, e.journal, writes)
	if err != nil {
		return nil, err
	}
	src.planOptions = e.planOptions
	if src.mat, err = materialize.New(src.j.Store(), e.matOptions...); err != nil {
		return nil, errors.Join(err, src.Close())
	}
	return src, nil
}

// openCluster opens the source of answers and finds the cluster asked
// about (--cluster-id, or the journal's only one).
func (e *env) openCluster(ctx context.Context, writes bool) (source, string, error) {
	src, err := e.open(ctx, writes)
	if err != nil {
		return nil, "", err
	}
	cluster, err := e.clusterOf(ctx, src)
	if err != nil {
		return nil, "", errors.Join(err, src.Close())
	}
	return src, cluster, nil
}

// warnIncomplete prints why an answer is incomplete on stderr and
// remembers it for the exit code.
func (e *env) warnIncomplete(format string, args ...any) {
	e.incomplete = true
	fmt.Fprintf(e.ErrOut, "warning: incomplete: "+format+"\n", args...)
}

// version prints the plugin's version.
func (e *env) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version (stamped at build time, else krply's)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(e.Out, "kubectl-krply", recorder.Version(version))
			return nil
		},
	}
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

// exactArgs wants n positional arguments, named by what.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		if len(args) == 2 && strings.Contains(what, "TYPE/NAME") && !strings.Contains(args[0], "/") {
			return usagef("%s wants %s: write %s/%s", cmd.CommandPath(), what, args[0], args[1])
		}
		return usagef("%s wants %s, got %d arguments", cmd.CommandPath(), what, len(args))
	}
}
