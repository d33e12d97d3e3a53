package broadcast

import (
	"testing"
	"time"
)

// TestSignal: Notify closes the channel of every Wait before it, and a
// Wait after it waits for the next Notify.
func TestSignal(t *testing.T) {
	var s Signal
	s.Notify() // nobody waits: nothing to close
	a, b := s.Wait(), s.Wait()
	if a != b {
		t.Fatal("two waits before a notify have different channels")
	}
	select {
	case <-a:
		t.Fatal("closed before Notify")
	default:
	}
	s.Notify()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		case <-time.After(time.Second):
			t.Fatal("not closed by Notify")
		}
	}
	c := s.Wait()
	select {
	case <-c:
		t.Fatal("a wait after Notify is already closed")
	default:
	}
}
