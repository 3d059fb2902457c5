package app

import (
	"fmt"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf/outbox"
)

var _ monitor.DeadLetterProvider = appMonitor{}

// runningForwarders returns the running uplinks, in configuration order.
func (a *App) runningForwarders() []*forwarder {
	a.fwdMu.Lock()
	defer a.fwdMu.Unlock()
	return a.forwarders
}

// findForwarders returns the running uplink named name, or all for "".
func (m appMonitor) findForwarders(name string) ([]*forwarder, error) {
	var fws []*forwarder
	if m.forwarders != nil {
		fws = m.forwarders()
	}
	if name == "" {
		return fws, nil
	}
	for _, f := range fws {
		if f.name == name {
			return []*forwarder{f}, nil
		}
	}
	return nil, fmt.Errorf("%w %q", monitor.ErrUnknownUplink, name)
}

// DeadLetters implements monitor.DeadLetterProvider.
func (m appMonitor) DeadLetters(uplink string, from uint64, limit int) ([]monitor.DeadLetterInfo, error) {
	fws, err := m.findForwarders(uplink)
	if err != nil {
		return nil, err
	}
	var out []monitor.DeadLetterInfo
	for _, f := range fws {
		list, err := f.ob.DeadLetters(from, limit-len(out))
		if err != nil {
			return out, fmt.Errorf("uplink %s: %w", f.name, err)
		}
		for _, d := range list {
			out = append(out, deadLetterInfo(f.name, d))
		}
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// deadLetterInfo maps a dead letter to its monitoring entry.
func deadLetterInfo(uplink string, d outbox.DeadLetter) monitor.DeadLetterInfo {
	return monitor.DeadLetterInfo{Uplink: uplink, Seq: d.Seq, Subject: d.Subject, Size: d.Size, Reason: d.Reason,
		Error: d.Error, Time: d.Time, OutboxSeq: d.OutboxSeq, MsgID: d.MsgID, Refusals: d.Refusals}
}

// Requeue implements monitor.DeadLetterProvider.
func (m appMonitor) Requeue(uplink string, seqs []uint64, all bool) (int, error) {
	if uplink == "" {
		return 0, fmt.Errorf("%w: no uplink named", monitor.ErrUnknownUplink)
	}
	fws, err := m.findForwarders(uplink)
	if err != nil {
		return 0, err
	}
	if all {
		return fws[0].ob.RequeueAll()
	}
	return fws[0].ob.Requeue(seqs)
}
