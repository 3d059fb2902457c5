package filestore

import (
	"math"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// Group commit.
//
// Every write to a block file advances s.written. A writer that needs its
// bytes durable calls waitDurable with the position just after them (its
// ticket). If no fsync is running it becomes the leader: it writes out
// whatever is buffered, notes the current position, fsyncs the active
// block without holding s.mu, and publishes the position as synced. Writers
// arriving meanwhile wait; the next leader's fsync covers all of them, so
// N concurrent Stores cost about two fsyncs instead of N. Sealed blocks
// are fsynced when they are sealed, so the active block is the only file
// with unsynced writes.
//
// If an fsync fails, what reached the disk is unknown (on Linux the dirty
// pages may be dropped and a later fsync succeed without them), so every
// ticket the failed fsync was meant to cover fails, even if a later fsync
// succeeds. Recovery copes with the hole that may leave in the block.
//
// The outcome of each fsync also settles the limit evictions waiting for
// it (limits.go): their tombstones are released to be written once the
// record that caused them is durable, and dropped if that fsync failed.

// waitDurable blocks until the block bytes before ticket are durable.
func (s *Stream) waitDurable(ticket uint64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for {
		if ticket > s.failedFrom && ticket <= s.failedTo {
			return s.syncErr
		}
		if s.synced >= ticket {
			return nil
		}
		if s.syncing {
			s.syncCond.Wait()
			continue
		}
		s.syncing = true
		s.syncMu.Unlock()
		target, err := s.syncActive()
		s.syncMu.Lock()
		s.syncing = false
		s.syncCond.Broadcast()
		if err != nil && target < ticket {
			// No fsync covered this ticket (the stream is closed):
			// report the error as is.
			return err
		}
	}
}

// syncActive writes buffered records and fsyncs the active block without
// holding s.mu. It returns the write position the fsync was to cover.
func (s *Stream) syncActive() (uint64, error) {
	s.mu.Lock()
	b := s.active
	if b == nil || b.file == nil {
		s.mu.Unlock()
		return 0, store.ErrClosed
	}
	// Buffered tombstones of evictions may fail to write on a full disk;
	// they stay buffered and do not hold up the fsync of what was written.
	s.releaseEvictions()
	_ = s.flushLocked()
	target := s.written
	f := b.file
	s.fileMu.RLock()
	s.mu.Unlock()
	err := s.fsync(f, b.id, target)
	s.fileMu.RUnlock()
	return target, err
}

// syncLocked writes buffered records and fsyncs the active block while
// holding s.mu, for steps that must not get ahead of what is durable:
// sealing, removing or replacing a block file, Close.
func (s *Stream) syncLocked() error {
	s.releaseEvictions()
	if err := s.flushLocked(); err != nil {
		return err
	}
	target := s.written
	s.syncMu.Lock()
	done := s.synced >= target && !(target > s.failedFrom && target <= s.failedTo)
	s.syncMu.Unlock()
	if done {
		return nil
	}
	return s.fsync(s.active.file, s.active.id, target)
}

// fsync syncs f, the active block holding every write up to target, and
// records the outcome. fsyncs of the active block never overlap, so their
// outcomes are recorded in the order they happened: a success recorded
// after a failure really came later.
func (s *Stream) fsync(f vfs.File, id uint32, target uint64) error {
	s.fsyncMu.Lock()
	defer s.fsyncMu.Unlock()
	err := f.Sync()
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if err != nil {
		err = ioError("sync", id, err)
		s.recordFailure(target, err)
	} else if target > s.synced {
		s.synced = target
	}
	s.settleEvictions(target, err == nil)
	s.syncCond.Broadcast()
	return err
}

// recordFailure remembers that the fsync meant to cover up to target
// failed; the caller holds syncMu.
func (s *Stream) recordFailure(target uint64, err error) {
	if target <= s.synced {
		return
	}
	if s.failedTo <= s.synced {
		s.failedFrom = s.synced
	}
	s.failedTo = max(s.failedTo, target)
	s.syncErr = err
}

// markSynced records that everything written up to target is durable
// without an fsync: after a purge made it all irrelevant.
func (s *Stream) markSynced(target uint64) {
	s.syncMu.Lock()
	if target > s.synced {
		s.synced = target
	}
	// The purge removed every message a pending eviction names, and the
	// buffer some of their causes were in.
	s.settleEvictions(math.MaxUint64, false)
	s.syncCond.Broadcast()
	s.syncMu.Unlock()
}

// failSync fails every waiting ticket, when Close could not sync.
func (s *Stream) failSync(err error) {
	s.syncMu.Lock()
	s.recordFailure(s.written, err)
	s.settleEvictions(s.written, false)
	s.syncCond.Broadcast()
	s.syncMu.Unlock()
}

// flushLoop syncs an asynchronous stream every interval until Close.
func (s *Stream) flushLoop(interval time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// Errors surface to the next Store, which writes too.
			_ = s.Sync()
		}
	}
}
