package leaf

import "context"

// WaitFor blocks until cond holds for the link's status; it is checked at
// every state change and recorded error.
func (l *Link) WaitFor(ctx context.Context, cond func(Status) bool) error {
	return l.wait(ctx, cond)
}

// LoopSubject returns the link's loop-detection subject.
func (l *Link) LoopSubject() string { return l.lds }
