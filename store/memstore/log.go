package memstore

// entry is one message slot in a msgLog. A removed slot (a tombstone) keeps
// its seq, so that binary search still works, and has a nil subject.
type entry struct {
	// subject is the message's subject index node; nil marks a tombstone.
	subject *subjectState
	// buf holds the header followed by the data; the store owns it.
	buf []byte
	seq uint64
	// ts is the store time in Unix nanoseconds.
	ts int64
	// prev and next are the sequences of the neighbouring messages with
	// the same subject, 0 for none. They form the per-subject list that
	// keeps per-subject limits and literal lookups cheap.
	prev, next uint64
	hdrLen     uint32
	flags      entryFlags
}

// entryFlags mark entries that need attention at removal or expiry.
type entryFlags uint8

const (
	// flagTTL marks an entry that has a pending per-message expiry.
	flagTTL entryFlags = 1 << iota
	// flagNoAge marks an entry that MaxAge never expires (a TTL of
	// "never").
	flagNoAge
)

func (e *entry) live() bool { return e.subject != nil }

func (e *entry) header() []byte { return e.buf[:e.hdrLen:e.hdrLen] }

func (e *entry) data() []byte { return e.buf[e.hdrLen:] }

// size is the entry's accounting size, as store.Size computes it.
func (e *entry) size() uint64 { return uint64(len(e.subject.name)+len(e.buf)) + msgOverhead }

// msgOverhead is the per-message overhead store.Size adds.
const msgOverhead = 16

// The log stores slots in fixed-size blocks, so that it grows without
// copying and gives memory back a block at a time.
const (
	blockShift = 9
	blockSize  = 1 << blockShift
	blockMask  = blockSize - 1
)

type block [blockSize]entry

// compactMinGarbage is the number of tombstones below which the log never
// compacts; above it, it compacts once tombstones are half of its slots.
const compactMinGarbage = 32

// msgLog holds a stream's messages in sequence order, so a store appends
// without allocating and scans walk contiguous memory.
//
// Slots are addressed by a logical index 0..n-1 and ordered by strictly
// increasing seq; each holds a live entry or a tombstone. Slot 0 is live
// whenever n > 0: removing the first live entry drops the slots before the
// next live one, and a block once all its slots are dropped. Tombstones
// elsewhere stay until compaction, which removes them once they make up
// half of the slots, so removal is amortised O(1).
type msgLog struct {
	blocks []*block
	// start is the position of slot 0 within blocks[0].
	start int
	// n counts slots; removed counts the tombstones among them.
	n       int
	removed int
	// spare is an emptied block kept for the next append.
	spare *block
	// hold defers compaction while a caller iterates by index.
	hold bool
}

// at returns slot i; valid until the log is next modified.
func (l *msgLog) at(i int) *entry {
	j := l.start + i
	return &l.blocks[j>>blockShift][j&blockMask]
}

// append adds e, whose seq must exceed every seq in the log.
func (l *msgLog) append(e entry) {
	j := l.start + l.n
	if j>>blockShift == len(l.blocks) {
		b := l.spare
		if b == nil {
			b = new(block)
		}
		l.spare = nil
		l.blocks = append(l.blocks, b)
	}
	l.blocks[j>>blockShift][j&blockMask] = e
	l.n++
}

// search returns the index of the first slot whose seq is at least seq, or
// n if there is none.
func (l *msgLog) search(seq uint64) int {
	if l.n == 0 {
		return 0
	}
	base := l.at(0).seq
	if seq <= base {
		return 0
	}
	// Sequences grow by at least one per slot, so the slot for seq sits
	// no further than seq-base slots in. Without gaps it sits exactly
	// there: that is the O(1) path.
	lo, hi := 0, l.n
	if d := seq - base; d < uint64(l.n) {
		guess := int(d)
		if l.at(guess).seq == seq {
			return guess
		}
		hi = guess
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.at(mid).seq < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// find returns the index of the live entry with sequence seq, or -1.
func (l *msgLog) find(seq uint64) int {
	i := l.search(seq)
	if i < l.n {
		if e := l.at(i); e.seq == seq && e.live() {
			return i
		}
	}
	return -1
}

// get returns the live entry with sequence seq, or nil. The pointer is valid
// until the log is next modified.
func (l *msgLog) get(seq uint64) *entry {
	if i := l.find(seq); i >= 0 {
		return l.at(i)
	}
	return nil
}

// last returns the index of the last live entry, or -1.
func (l *msgLog) last() int {
	for i := l.n - 1; i >= 0; i-- {
		if l.at(i).live() {
			return i
		}
	}
	return -1
}

// nextLive returns the index of the first live entry at or after index i,
// or n.
func (l *msgLog) nextLive(i int) int {
	for i < l.n && !l.at(i).live() {
		i++
	}
	return i
}

// remove turns the live entry at index i into a tombstone, releasing its
// buffer. Unless the log is held, removing slot 0 renumbers the slots and a
// compaction may do so too; while it is held, slot 0 may be a tombstone.
func (l *msgLog) remove(i int) {
	e := l.at(i)
	*e = entry{seq: e.seq}
	l.removed++
	if !l.hold {
		if i == 0 {
			l.dropFront()
		}
		l.maybeCompact()
	}
}

// release ends a hold: it drops the tombstones at the front and compacts
// if due.
func (l *msgLog) release() {
	l.hold = false
	l.dropFront()
	l.maybeCompact()
}

// dropFront drops the tombstones at the front, and the blocks they empty.
func (l *msgLog) dropFront() {
	for l.n > 0 && !l.at(0).live() {
		*l.at(0) = entry{}
		l.start++
		l.n--
		l.removed--
		if l.start == blockSize {
			l.spare = l.blocks[0]
			l.blocks[0] = nil
			l.blocks = l.blocks[1:]
			l.start = 0
		}
	}
	if l.n == 0 {
		l.reset()
	}
}

// maybeCompact compacts the log if enough of it is tombstones.
func (l *msgLog) maybeCompact() {
	if l.removed >= compactMinGarbage && l.removed*2 >= l.n {
		l.compact()
	}
}

// compact moves the live entries down over the tombstones and releases
// the blocks no longer needed.
func (l *msgLog) compact() {
	j := 0
	for i := 0; i < l.n; i++ {
		if e := l.at(i); e.live() {
			if i != j {
				*l.at(j) = *e
				*e = entry{}
			}
			j++
		} else {
			*e = entry{}
		}
	}
	l.n, l.removed = j, 0
	used := (l.start + l.n + blockMask) >> blockShift
	clear(l.blocks[used:])
	l.blocks = l.blocks[:used]
}

// reset empties the log, keeping one block for reuse.
func (l *msgLog) reset() {
	// Dead slots hold no pointers, so a block is reusable as it is.
	if l.spare == nil && len(l.blocks) > 0 {
		l.spare = l.blocks[0]
	}
	clear(l.blocks)
	l.blocks = l.blocks[:0]
	l.start, l.n, l.removed = 0, 0, 0
}
