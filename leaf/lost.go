package leaf

import "context"

// Lost returns a channel closed when the link's registration with a hub
// current at the call ends: its connection dropped, or a new connection
// replaced it. It is closed at once when the link is not registered. The
// watch ends with ctx; the channel then stays open, as it does when the
// link is closed.
func (l *Link) Lost(ctx context.Context) <-chan struct{} {
	st := l.Status()
	ch := make(chan struct{})
	if st.State != StateConnected {
		if st.State != StateClosed {
			close(ch)
		}
		return ch
	}
	go func() {
		if l.Wait(ctx, func(s Status) bool { return s.State != StateConnected || s.Connects != st.Connects }) == nil {
			close(ch)
		}
	}()
	return ch
}
