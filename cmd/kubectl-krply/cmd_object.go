package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// objectArgs opens the source and resolves the TYPE/NAME argument.
func (e *env) objectArgs(ctx context.Context, arg string) (source, storage.ObjectID, error) {
	src, cluster, err := e.openCluster(ctx, false)
	if err != nil {
		return nil, storage.ObjectID{}, err
	}
	obj, err := e.objectRef(ctx, src, cluster, arg)
	if err != nil {
		return nil, storage.ObjectID{}, errors.Join(err, src.Close())
	}
	return src, obj, nil
}

// objectName prints an object ID as the user may type it back.
func objectName(obj storage.ObjectID) string {
	res := obj.Resource
	if obj.Group != "" {
		res += "." + obj.Group
	}
	if obj.Namespace != "" {
		return fmt.Sprintf("%s/%s in namespace %s", res, obj.Name, obj.Namespace)
	}
	return res + "/" + obj.Name
}

func (e *env) getCommand() *cobra.Command {
	var at string
	cmd := &cobra.Command{
		Use:   "get TYPE/NAME",
		Short: "Print an object as it was at a time",
		Long: `get prints one object as the journal knows it at --at: the last version
observed at or before that time. -o yaml and -o json print the object itself,
as kubectl get does; the table says which version it is and whether the
journal covers that time. An object that did not exist then is an error
(exit code 1); for a deleted one it says whether a watch DELETED event was
observed or the deletion was inferred by a relist after a gap (and between
which times).`,
		Example: `  kubectl krply get deploy/web -n shop --at "10m ago" -o yaml
  kubectl krply get cm/settings -n shop --at 2026-12-01T10:04:05.123456789Z`,
		Args:              exactArgs(1, "one TYPE/NAME"),
		ValidArgsFunction: e.completeObjects,
	}
	p := addPrintFlags(cmd, "wide")
	cmd.Flags().StringVar(&at, "at", "now", `time: RFC 3339, "now" or "10m ago"`)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		when, err := parseTime("at", at, e.now())
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		src, obj, err := e.objectArgs(ctx, args[0])
		if err != nil {
			return err
		}
		defer src.Close()
		st, err := src.ObjectAt(ctx, obj, when)
		if err != nil {
			return fmt.Errorf("%s: %w", objectName(obj), err)
		}
		if st.ExcludedByRule != "" {
			// Not recorded: neither "not found" nor "deleted" is known.
			return fmt.Errorf("%s: unknown at %s: %s", objectName(obj), ts(when), st.ExcludedByRule)
		}
		if !st.Covered {
			e.warnIncomplete("the journal does not cover %s at %s: %s", objectName(obj), ts(when), coverageReasons(st.Coverage, st.Warnings))
		}
		if !st.Exists || st.Record == nil {
			if st.Record == nil {
				return fmt.Errorf("%s: not found at %s: the journal's first version of it is later", objectName(obj), ts(when))
			}
			if st.Inferred != nil {
				return fmt.Errorf("%s: not found at %s: %s", objectName(obj), ts(when), inferredDeletion(st.Inferred))
			}
			return fmt.Errorf("%s: not found at %s: deleted (a watch DELETED event, observed %s)", objectName(obj), ts(when), ts(st.Record.ObservedAt))
		}
		body := &unstructured.Unstructured{}
		if err := body.UnmarshalJSON(st.Object); err != nil {
			return fmt.Errorf("%s: the recorded body is not an object: %w", objectName(obj), err)
		}
		return p.print(e.Out, view{value: body, names: []event.ResourceRef{st.Record.Resource}, table: func(w io.Writer, format string) error {
			tw := newTable(w)
			header := "NAMESPACE\tNAME\tRESOURCEVERSION\tOBSERVED\tFROM\tCOVERED"
			if format == "wide" {
				header += "\tEVENT ID\tSTREAM"
			}
			fmt.Fprintln(tw, header)
			r := st.Record
			line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%v", orNone(r.Resource.Namespace), refString(r.Resource), r.Resource.ResourceVersion, ts(r.ObservedAt), origin(r), st.Covered)
			if format == "wide" {
				line += "\t" + r.EventID + "\t" + r.StreamID
			}
			fmt.Fprintln(tw, line)
			return tw.Flush()
		}})
	}
	return cmd
}

// origin says where a record came from: a watch event, a list (baseline),
// an inferred deletion or the object's leaving a recording rule.
func origin(r *event.Record) string {
	switch {
	case r.IsExclusion():
		return "excluded"
	case r.Inferred != nil:
		return "inferred"
	case r.Synthetic || r.Type == event.TypeBaseline:
		return "list"
	}
	return "watch"
}

// coverageReasons joins why the streams of an answer are not covered.
func coverageReasons(covs []storage.Coverage, warnings []string) string {
	var out []string
	for _, c := range covs {
		if !c.Covered {
			out = append(out, c.StreamID+": "+c.Reason)
		}
	}
	out = append(out, warnings...)
	if len(out) == 0 {
		return "no stream records it"
	}
	return strings.Join(out, "; ")
}

// value prints a field's value on one line: JSON, strings unquoted.
func value(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// formatChanges renders field changes on one line:
// "spec.replicas: 1 → 3; data.key = v; metadata.labels removed".
func formatChanges(changes []materialize.FieldChange) string {
	parts := make([]string, 0, len(changes))
	for _, c := range changes {
		switch c.Op {
		case materialize.OpAdd:
			parts = append(parts, fmt.Sprintf("%s = %s", c.Path, value(c.After)))
		case materialize.OpRemove:
			parts = append(parts, c.Path+" removed")
		default:
			parts = append(parts, fmt.Sprintf("%s: %s → %s", c.Path, value(c.Before), value(c.After)))
		}
	}
	return strings.Join(parts, "; ")
}
