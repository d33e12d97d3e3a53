package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

// benchLog returns n audit lines: per object a RequestResponse create and
// update, and a Metadata-level get, in the JSON the log backend writes.
func benchLog(b *testing.B, objects int) ([]byte, []event.Record) {
	b.Helper()
	var log bytes.Buffer
	records := storagetest.Baseline(cmStream, "b1", at(-30, 0), "1", nil)
	for i := 0; i < objects; i++ {
		name := fmt.Sprintf("cm-%05d", i)
		uid := fmt.Sprintf("uid-%05d", i)
		received := at(0, 0).Add(time.Duration(i) * time.Millisecond)
		for j, verb := range []string{"create", "update", "get"} {
			rv := fmt.Sprint(10*i + j + 10)
			body := storagetest.ConfigMap("shop", name, uid, rv, map[string]string{"key": rv})
			var evt Event
			if verb == "get" {
				evt = writeEvent(fmt.Sprintf("%s-%d", name, j), "bob", verb, received.Add(2*time.Second), nil)
			} else {
				evt = writeEvent(fmt.Sprintf("%s-%d", name, j), "alice", verb, received.Add(time.Duration(j)*time.Second), body)
				evt.RequestObject = body
				wt := event.Added
				if verb == "update" {
					wt = event.Modified
				}
				ref := storagetest.Ref(cmStream, "ConfigMap", "shop", name, uid, rv)
				records = append(records, storagetest.Event(cmStream, wt, ref, body, received.Add(time.Duration(j)*time.Second+10*time.Millisecond)))
			}
			evt.ObjectRef.Name = name
			line, err := json.Marshal(evt)
			if err != nil {
				b.Fatal(err)
			}
			log.Write(line)
			log.WriteByte('\n')
		}
	}
	return log.Bytes(), records
}

// BenchmarkReader measures decoding JSON lines (bytes/s and events/s).
func BenchmarkReader(b *testing.B) {
	log, _ := benchLog(b, 1000)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(log), "bench")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 3000 {
			b.Fatalf("read %d events", n)
		}
	}
	b.ReportMetric(float64(3000*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkIngest measures reading and matching a log of 3,000 events
// (2,000 exact matches, 1,000 read-only) against a memory journal that
// already holds the correlations (the steady state of re-ingesting).
func BenchmarkIngest(b *testing.B) {
	log, records := benchLog(b, 1000)
	st := memory.New()
	defer st.Close()
	if _, err := st.Append(context.Background(), records); err != nil {
		b.Fatal(err)
	}
	c, err := NewCorrelator(st, cluster)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(log), "bench")
		if err != nil {
			b.Fatal(err)
		}
		sum, err := c.Ingest(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Exact != 2000 || sum.SkippedReadOnly != 1000 {
			b.Fatalf("summary %+v", withoutProblems(sum))
		}
	}
	b.ReportMetric(float64(3000*b.N)/b.Elapsed().Seconds(), "events/s")
}
