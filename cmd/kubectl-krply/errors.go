package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/krply/krply/replay"
	"github.com/krply/krply/server"
)

// policyFlags maps the fields of replay.Policy that library messages name
// to the flags of `replay plan` that set them.
var policyFlags = map[string]string{
	"AllowGaps":            "--allow-gaps",
	"AllowSourceCluster":   "--allow-source-cluster",
	"AllowSecrets":         "--allow-secrets",
	"AllowServiceAccounts": "--allow-service-accounts",
	"AllowRBAC":            "--allow-rbac",
	"AllowPods":            "--allow-pods",
	"AllowJobs":            "--allow-jobs",
	"AllowStorage":         "--allow-storage",
	"AllowLoadBalancers":   "--allow-load-balancers",
	"AllowWebhooks":        "--allow-webhooks",
	"AllowCRDs":            "--allow-crds",
	"AllowFinalizers":      "--allow-finalizer",
	"KeepOwnerReferences":  "--keep-owner-references",
	"KeepClusterIPs":       "--keep-cluster-ips",
	"KeepNodePorts":        "--keep-node-ports",
	"Kinds":                "--kind",
	"Names":                "--name",
}

var policyField = regexp.MustCompile(`(?:set |opt in with )?Policy\.([A-Za-z]+)`)

// flagWords rewrites the Go fields a library message names (Policy.AllowGaps)
// as the flags that set them.
func flagWords(s string) string {
	return policyField.ReplaceAllStringFunc(s, func(m string) string {
		field := policyField.FindStringSubmatch(m)[1]
		flag, ok := policyFlags[field]
		if !ok {
			return m
		}
		switch {
		case strings.HasPrefix(m, "set "):
			return "give " + flag
		case strings.HasPrefix(m, "opt in with "):
			return "opt in with " + flag
		}
		return flag
	})
}

const coverHint = "; choose a covered time with --at (kubectl krply status, kubectl krply gaps)"

// errNeverRecorded: the journal holds no version of the object asked
// about.
var errNeverRecorded = errors.New("not found: the journal never recorded it (check TYPE, -n and NAME; kubectl krply snapshot lists what it holds)")

// message says what went wrong in the words of the command line: flags,
// not Go fields; one "replay:" prefix at most.
func message(err error) string {
	var confirm *replay.ConfirmationRequiredError
	var source *replay.SourceClusterError
	var cover *replay.CoverageIncompleteError
	var serr *server.Error
	switch {
	case errors.As(err, &confirm):
		return fmt.Sprintf("plan %s was not applied: %s; apply exactly the plan you reviewed with: kubectl krply replay apply %s --confirm %s",
			confirm.PlanID, confirm.Reason, confirm.PlanID, confirm.PlanHash)
	case errors.As(err, &source):
		refused := fmt.Sprintf("plan %s was not applied", source.PlanID)
		if source.DryRun {
			refused = fmt.Sprintf("dry run of plan %s refused", source.PlanID)
		}
		return fmt.Sprintf("%s: the target cluster %s is the cluster the history was recorded from; choose a sandbox with --context or --kubeconfig, or plan again with --allow-source-cluster",
			refused, source.ClusterID)
	case errors.As(err, &cover):
		return flagWords(strings.TrimPrefix(cover.Error(), "replay: ")) + coverHint
	case errors.As(err, &serr):
		msg := flagWords(strings.TrimPrefix(serr.Message, "replay: "))
		switch serr.Code {
		case server.CodeCoverageIncomplete:
			msg += coverHint
		case server.CodeUnauthenticated, server.CodeForbidden:
			msg = fmt.Sprintf("the query API refused the request (%s): %s; give a token it accepts with --token or --token-file", serr.Code, msg)
		}
		return msg
	}
	msg := err.Error()
	for strings.Contains(msg, "replay: replay: ") {
		msg = strings.ReplaceAll(msg, "replay: replay: ", "replay: ")
	}
	return flagWords(msg)
}
