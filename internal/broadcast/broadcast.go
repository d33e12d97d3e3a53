// Package broadcast wakes every waiter at once: a channel closed at the
// next Notify, made anew for the waiters after it.
package broadcast

import "sync"

// Signal is a broadcast. The zero value is ready; it is safe for
// concurrent use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns a channel closed at the next Notify.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify closes the channel Wait returned, if any.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
