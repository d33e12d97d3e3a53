// Command kubectl-krply is the kubectl plugin of krply: `kubectl krply
// history deploy/web` answers what changed, when and by whom from a
// journal file or a recorder's query API, with kubectl's flags and
// printers. See doc.go.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
