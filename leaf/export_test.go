package leaf

// LoopSubject returns the link's loop-detection subject.
func (l *Link) LoopSubject() string { return l.lds }
