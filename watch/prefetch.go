package watch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pageFetch is a list page being fetched on a goroutine of its own, so
// that the apiserver prepares the next page of a paginated list while the
// stream records the one before (parses its items, hashes, builds records)
// and the committer appends the one before that.
type pageFetch struct {
	done chan struct{}
	p    page
	err  error
}

// fetchPage starts listing one page of src with opts.
func fetchPage(ctx context.Context, src source, opts metav1.ListOptions) *pageFetch {
	f := &pageFetch{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.p, f.err = src.list(ctx, opts)
	}()
	return f
}

// wait returns the page once it is fetched.
func (f *pageFetch) wait() (page, error) {
	<-f.done
	return f.p, f.err
}
