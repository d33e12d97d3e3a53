package storage

import (
	"context"

	"github.com/krply/krply/event"
)

// MultiGetter is implemented by a Reader that reads many records by
// EventID in one call for less than one Get each: the SQLite store looks
// them up a few hundred per statement. GetMany uses it when the Reader
// has it.
type MultiGetter interface {
	// GetMany returns the records with the given EventIDs, as stored, in
	// the order of eventIDs (a repeated ID gives its record again). When
	// one of them is not in the journal, it returns an error wrapping
	// ErrNotFound that names it.
	GetMany(ctx context.Context, eventIDs []string) ([]event.Record, error)
}

// GetMany returns the records with the given EventIDs, as stored, in the
// order of eventIDs: with r's GetMany when r is a MultiGetter, one Get at
// a time otherwise. When one of them is not in the journal, the error
// wraps ErrNotFound.
func GetMany(ctx context.Context, r Reader, eventIDs []string) ([]event.Record, error) {
	if mg, ok := r.(MultiGetter); ok {
		return mg.GetMany(ctx, eventIDs)
	}
	out := make([]event.Record, len(eventIDs))
	for i, id := range eventIDs {
		rec, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out[i] = rec
	}
	return out, nil
}
