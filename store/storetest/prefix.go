package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/leafbox/leafbox/store"
)

// AckedMsg is a message whose Store call returned without error before a
// crash: the engine acknowledged it, so recovery must keep it. Crash tests
// record one per successful Store.
type AckedMsg struct {
	Seq     uint64
	Subject string
	Header  []byte
	Data    []byte
}

// maxPrefixErrors bounds how many differences CheckPrefix reports before
// giving up.
const maxPrefixErrors = 10

// CheckPrefix verifies that a recovered stream holds every acknowledged
// message with its sequence, subject, header and data, and that a LoadNext
// walk visits them in sequence order. acked must be in increasing sequence
// order. Messages that were stored but never acknowledged may or may not be
// present, anywhere in the sequence space; CheckPrefix ignores them. The
// stream must have no limits or removals that would drop acknowledged
// messages (pass only those expected to survive). CheckPrefix only reads.
func CheckPrefix(t testing.TB, acked []AckedMsg, s store.Stream) {
	t.Helper()
	if len(acked) == 0 {
		return
	}
	for i := 1; i < len(acked); i++ {
		if acked[i].Seq <= acked[i-1].Seq {
			t.Fatalf("CheckPrefix: acked messages out of order: %d after %d", acked[i].Seq, acked[i-1].Seq)
		}
	}
	st := s.State()
	lastAcked := acked[len(acked)-1].Seq
	if st.LastSeq < lastAcked || st.Msgs < uint64(len(acked)) {
		t.Errorf("recovered state has LastSeq %d and %d messages; %d acknowledged messages up to sequence %d",
			st.LastSeq, st.Msgs, len(acked), lastAcked)
	}

	bad := 0
	report := func(format string, args ...any) bool {
		t.Helper()
		t.Errorf(format, args...)
		bad++
		if bad >= maxPrefixErrors {
			t.Errorf("CheckPrefix: stopping after %d differences", bad)
			return false
		}
		return true
	}
	var sm store.Msg
	for _, a := range acked {
		m, err := s.Load(a.Seq, &sm)
		if err != nil {
			if !report("acknowledged message %d (%q) lost: Load: %v", a.Seq, a.Subject, err) {
				return
			}
			continue
		}
		if !sameMsg(m, a) {
			if !report("acknowledged message %d differs: got subject %q header %q data %q, want subject %q header %q data %q",
				a.Seq, m.Subject, m.Header, m.Data, a.Subject, a.Header, a.Data) {
				return
			}
		}
	}
	if bad > 0 {
		return
	}

	// Walk: the acknowledged sequences appear in order, with nothing
	// acknowledged skipped.
	next := 0
	for seq := uint64(0); next < len(acked); {
		m, err := s.LoadNext("", seq, &sm)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Errorf("LoadNext(\"\", %d): %v", seq, err)
			return
		}
		if m.Seq > acked[next].Seq {
			t.Errorf("LoadNext walk skipped acknowledged message %d (went from %d to %d)", acked[next].Seq, seq, m.Seq)
			return
		}
		if m.Seq == acked[next].Seq {
			if !sameMsg(m, acked[next]) {
				t.Errorf("LoadNext walk: message %d differs from what was acknowledged", m.Seq)
				return
			}
			next++
		}
		seq = m.Seq + 1
	}
	if next < len(acked) {
		t.Errorf("LoadNext walk ended before acknowledged message %d", acked[next].Seq)
	}
}

func sameMsg(m *store.Msg, a AckedMsg) bool {
	return m.Seq == a.Seq && m.Subject == a.Subject && bytes.Equal(m.Header, a.Header) && bytes.Equal(m.Data, a.Data)
}

// CheckResume verifies that a recovered stream goes on from where it was: a
// new message gets a sequence above every acknowledged one and above the
// recovered LastSeq, so no sequence is handed out twice. It stores one
// message on subject and returns its sequence.
func CheckResume(t testing.TB, acked []AckedMsg, s store.Stream, subject string) uint64 {
	t.Helper()
	last := s.State().LastSeq
	seq, _, err := s.Store(subject, nil, []byte("after recovery"), 0)
	if err != nil {
		t.Fatalf("Store after recovery: %v", err)
	}
	if seq != last+1 {
		t.Errorf("Store after recovery got sequence %d, want LastSeq+1 = %d", seq, last+1)
	}
	if n := len(acked); n > 0 && seq <= acked[n-1].Seq {
		t.Errorf("Store after recovery reused sequence %d (acknowledged up to %d)", seq, acked[n-1].Seq)
	}
	return seq
}
