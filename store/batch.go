package store

// CheckBatch refuses a batch one of whose messages Stream.Store would
// refuse, so that StoreBatch stores all of it or nothing: what check (the
// store's own rules for one message: its subject, its record) refuses, a
// message above cfg.MaxMsgSize, and under DiscardNew the
// limits, counting the batch's earlier messages with the msgs and bytes
// stored and subjectMsgs (the messages stored on a subject). Bytes are
// counted without the discount of a message a per-subject limit would
// replace: a batch is refused rather than half stored.
func CheckBatch(cfg *Config, batch []BatchMsg, msgs, bytes uint64, subjectMsgs func(subject string) uint64, check func(*BatchMsg) error) error {
	var (
		addMsgs, addBytes uint64
		perSubj           map[string]uint64
	)
	for i := range batch {
		m := &batch[i]
		if err := check(m); err != nil {
			return err
		}
		if cfg.MaxMsgSize > 0 && len(m.Header)+len(m.Data) > int(cfg.MaxMsgSize) {
			return ErrMaxMsgSize
		}
		size := Size(m.Subject, m.Header, m.Data)
		if cfg.Discard != DiscardNew {
			if cfg.MaxBytes > 0 && size > uint64(cfg.MaxBytes) {
				return ErrMaxBytes
			}
			continue
		}
		have := subjectMsgs(m.Subject) + perSubj[m.Subject]
		atLimit := cfg.MaxMsgsPerSubject > 0 && have >= uint64(cfg.MaxMsgsPerSubject)
		if atLimit && cfg.DiscardNewPerSubject {
			return ErrMaxMsgsPerSubject
		}
		if cfg.MaxMsgs > 0 && !atLimit && msgs+addMsgs >= uint64(cfg.MaxMsgs) {
			return ErrMaxMsgs
		}
		if cfg.MaxBytes > 0 && bytes+addBytes+size > uint64(cfg.MaxBytes) {
			return ErrMaxBytes
		}
		if !atLimit {
			addMsgs++
			if perSubj == nil {
				perSubj = make(map[string]uint64)
			}
			perSubj[m.Subject]++
		}
		addBytes += size
	}
	return nil
}
