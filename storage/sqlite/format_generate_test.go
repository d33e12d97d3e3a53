package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/storagetest"
)

// writeFormatJournal writes the journal of the format fixtures
// (testdata/format/v<N>.db) at path with this build's writer: a small
// history that holds every record type and every shape of stored body,
// at fixed times and with fixed IDs, so that two runs write the same
// records.
//
// It uses only Open, Append, Compact and Close and the storagetest
// builders, so that the same function, copied into an older checkout,
// writes that version's fixture.
func writeFormatJournal(ctx context.Context, path string) (err error) {
	s, err := Open(ctx, path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	for i, step := range formatJournalSteps() {
		if !step.compactBefore.IsZero() {
			if _, err := s.Compact(ctx, step.compactBefore); err != nil {
				return fmt.Errorf("step %d: compact: %w", i, err)
			}
			continue
		}
		if _, err := s.Append(ctx, step.records); err != nil {
			return fmt.Errorf("step %d: append: %w", i, err)
		}
	}
	return nil
}

// formatStep is one Append (records) or one Compact (compactBefore).
type formatStep struct {
	records       []event.Record
	compactBefore time.Time
}

// formatJournalSteps returns the history of the format fixtures. Three
// streams in two clusters:
//
//   - c1 deployments (all namespaces): a baseline, MODIFIED, ADDED and
//     DELETED events, a bookmark checkpoint, all compacted at 60 s into a
//     synthetic baseline; then versions of one object stored as deltas
//     against its keyframe, a new object alike another (a delta against
//     the other's keyframe), a time with nanoseconds, a real deletion and
//     audit correlations;
//   - c1 configmaps in namespace shop: a baseline, a 410 gap, a relist
//     that closes the gap and infers two deletions (an object replaced by
//     one with a new UID, an object absent from the relist), a checkpoint;
//   - c2 configmaps with a label selector: unavailable (403), available
//     again, a baseline interrupted before its end, then a complete one.
//
// and a snapshot (with a text EventID) and a replay plan of cluster c1.
func formatJournalSteps() []formatStep {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }
	dep := event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments"}
	cm := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	sel := event.Stream{ClusterID: "c2", Version: "v1", Resource: "configmaps", Selector: "labels:app=web;fields:"}

	deployment := func(wt event.WatchType, name, uid, rv string, replicas int, image string, when time.Time) event.Record {
		return storagetest.Event(dep, wt, storagetest.Ref(dep, "Deployment", "shop", name, uid, rv),
			storagetest.Deployment("shop", name, uid, rv, replicas, image), when)
	}
	deploymentItem := func(name, uid, rv string, replicas int, image string) storagetest.Item {
		return storagetest.Item{Ref: storagetest.Ref(dep, "Deployment", "shop", name, uid, rv), Object: storagetest.Deployment("shop", name, uid, rv, replicas, image)}
	}
	configMap := func(s event.Stream, wt event.WatchType, ns, name, uid, rv, color string, when time.Time) event.Record {
		return storagetest.Event(s, wt, storagetest.Ref(s, "ConfigMap", ns, name, uid, rv),
			storagetest.ConfigMap(ns, name, uid, rv, map[string]string{"color": color}), when)
	}
	configMapItem := func(s event.Stream, ns, name, uid, rv, color string) storagetest.Item {
		return storagetest.Item{Ref: storagetest.Ref(s, "ConfigMap", ns, name, uid, rv), Object: storagetest.ConfigMap(ns, name, uid, rv, map[string]string{"color": color})}
	}

	var steps []formatStep
	add := func(recs ...event.Record) { steps = append(steps, formatStep{records: recs}) }

	// Before the compaction at 60 s.
	add(storagetest.Baseline(dep, "bl-dep-1", at(1), "12", []storagetest.Item{
		deploymentItem("web", "u-web", "10", 1, "registry.example.com/web:1.0"),
		deploymentItem("api", "u-api", "11", 1, "registry.example.com/api:2.0"),
	})...)
	cmA := configMapItem(cm, "shop", "a", "u-a1", "20", "red")
	add(storagetest.Baseline(cm, "bl-cm-1", at(1), "22", []storagetest.Item{cmA, configMapItem(cm, "shop", "b", "u-b", "21", "blue")})...)
	web13 := deployment(event.Modified, "web", "u-web", "13", 2, "registry.example.com/web:1.0", at(10))
	add(web13)
	add(storagetest.Correlation(web13, "audit-0001", "alice", at(11)))
	old15 := deployment(event.Deleted, "old", "u-old", "15", 1, "registry.example.com/old:0.9", at(30))
	add(deployment(event.Added, "old", "u-old", "14", 1, "registry.example.com/old:0.9", at(20)), old15)
	add(storagetest.Correlation(old15, "audit-0002", "bob", at(31)))
	cmA23 := configMap(cm, event.Modified, "shop", "a", "u-a1", "23", "green", at(40))
	add(cmA23)
	add(storagetest.Checkpoint(dep, "16", true, at(50)))
	steps = append(steps, formatStep{compactBefore: at(60)})

	// After it.
	web18 := deployment(event.Modified, "web", "u-web", "18", 4, "registry.example.com/web:1.0", at(71))
	add(deployment(event.Modified, "web", "u-web", "17", 3, "registry.example.com/web:1.0", at(70)), web18,
		deployment(event.Modified, "api", "u-api", "19", 1, "registry.example.com/api:2.1", t0.Add(72*time.Second+123456789*time.Nanosecond)))
	add(storagetest.Correlation(web18, "audit-0003", "alice", at(73)))
	add(deployment(event.Added, "web2", "u-web2", "30", 1, "registry.example.com/web:1.0", at(74)))

	gap := storagetest.Gap(cm, at(40), at(80), "410 Gone: too old resource version", "23")
	add(gap)
	relist := storagetest.BaselineBegin(cm, "bl-cm-2", at(81), []storagetest.Item{
		configMapItem(cm, "shop", "a", "u-a2", "40", "red"),
		configMapItem(cm, "shop", "c", "u-c", "41", "yellow"),
	})
	relist[0].Baseline.Reason = "relist after gap"
	replaced := storagetest.InferredDelete(cm, cmA23, at(40), at(81), "bl-cm-2")
	replaced.Inferred.Reason = "replaced by a new object with the same name during the gap"
	end := storagetest.BaselineEnd(cm, "bl-cm-2", at(81), "42", 2)
	end.Baseline.Reason, end.Baseline.ClosesGap = "relist after gap", gap.EventID
	cmB := storagetest.Event(cm, event.Added, storagetest.Ref(cm, "ConfigMap", "shop", "b", "u-b", "21"),
		storagetest.ConfigMap("shop", "b", "u-b", "21", map[string]string{"color": "blue"}), at(1))
	add(relist[0], replaced, relist[1], relist[2], end, storagetest.InferredDelete(cm, cmB, at(40), at(81), "bl-cm-2"))

	add(storagetest.CoverageChange(sel, false, `403 Forbidden: configmaps is forbidden: User "krply" cannot list resource "configmaps"`, 403, at(85)))
	add(storagetest.CoverageChange(sel, true, "access granted", 0, at(90)))
	add(storagetest.BaselineBegin(sel, "bl-sel-1", at(91), []storagetest.Item{
		configMapItem(sel, "web", "x", "u-x", "100", "red"),
		configMapItem(sel, "web", "y", "u-y", "101", "blue"),
	})...)
	add(storagetest.Baseline(sel, "bl-sel-2", at(95), "103", []storagetest.Item{configMapItem(sel, "web", "x", "u-x", "102", "red")})...)

	snapshot := storagetest.Document(event.TypeSnapshot, "c1", "snap-1", "shop before upgrade", at(96), true,
		[]byte(`{"kind":"Snapshot","at":"2025-01-01T00:01:36Z","objects":["apps/deployments/shop/web","apps/deployments/shop/api"]}`))
	snapshot.EventID = "snapshot:shop-before-upgrade"
	add(snapshot,
		storagetest.Document(event.TypePlan, "c1", "plan-1", "roll back web", at(97), false,
			[]byte(`{"kind":"ReplayPlan","target":"c1","steps":[{"verb":"update","object":"apps/deployments/shop/web"}]}`)))
	add(storagetest.Checkpoint(cm, "45", false, at(98)))
	apiGone := deployment(event.Deleted, "api", "u-api", "50", 1, "registry.example.com/api:2.1", at(99))
	add(apiGone, configMap(sel, event.Modified, "web", "x", "u-x", "104", "purple", at(99.5)))
	add(storagetest.Correlation(apiGone, "audit-0004", "carol", at(100)))
	return steps
}
