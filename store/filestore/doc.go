// Package filestore is leafbox's file storage engine: a store.Stream kept
// in append-only block files with a checksum on every record, and a
// store.ConsumerStore kept in an append-only change log. All file access
// goes through store/vfs, so crash and fault tests run the real code
// against vfs.NewStrictMem and vfs.Inject.
//
// # Files
//
// A stream owns one directory:
//
//	0000000001.blk   block files, numbered in creation order; the highest is
//	0000000002.blk   the active block, the only one appended to
//	0000000002.idx   index file of block 2 (optional, rebuilt when missing)
//	*.tmp            half-written replacements, removed by Open
//	stream.key       the sealed data key of an encrypted stream
//
// A consumer store owns a directory holding consumer.log (and, encrypted,
// consumer.key).
//
// # Block format (format version 1)
//
// A block starts with a 48-byte header; all integers are little endian:
//
//	+------+---+---+----+----+----+---------+----------+-------+----+-------+
//	|"LFBK"|ver|flg|rsvd| id |rsvd| baseSeq | baseTime | stamp |rsvd| crc32c|
//	+------+---+---+----+----+----+---------+----------+-------+----+-------+
//	   4     1   1   2    4    4      8          8         8      4     4
//
// baseSeq and baseTime are the stream's last sequence and its time when the
// block was created, so LastSeq survives even when every message is gone;
// stamp is random and changes whenever the file is rewritten. The crc32c
// (Castagnoli) covers the 44 bytes before it. Flag bit 0 marks an S2
// block.
//
// The body of a plain block is a sequence of records:
//
//	+-----+----+-------+--------+--------+-----+----+-----+------+------------------------+-------+
//	|magic|kind|subjLen| length | hdrLen | seq | ts | ttl | hcrc | subject | header | data | crc32c|
//	+-----+----+-------+--------+--------+-----+----+-----+------+------------------------+-------+
//	   1     1     2       4        4       8    8     8     4     subjLen   hdrLen   rest     4
//
// magic is 0xB7. length is the whole record, 44 bytes of framing included.
// hcrc covers the 36 bytes before it, so recovery can tell a record start
// from noise without trusting length; the final crc32c covers everything
// before it. Kinds:
//
//   - 1 message: ts is the store time (Unix ns); ttl > 0 expires it at
//     ts+ttl, ttl < 0 exempts it from MaxAge.
//   - 2 tombstone: deletes sequences seq..ts (ts holds the last sequence);
//     subject, header and data are empty.
//   - 3 erased: a message overwritten in place by Remove(seq, true), same
//     length, every byte after the fixed part zero.
//
// The body of an S2 block (sealed blocks of a stream with CompressionS2)
// is a sequence of chunk frames, each holding whole records of about 64
// KiB:
//
//	+-----+---+----+--------+--------+---------+---------+------+----------------+
//	|magic|flg|rsvd| rawOff | rawLen | compLen | dataCRC | hcrc | s2 block       |
//	+-----+---+----+--------+--------+---------+---------+------+----------------+
//	   1    1   2      4        4         4         4       4     compLen
//
// magic is 0xC5; rawOff is where the chunk's records start in the block's
// uncompressed record stream, so a lost chunk does not shift the others.
// Indexes address records by that uncompressed offset.
//
// # Encryption at rest
//
// With Config.Encryption a stream seals its message records and index
// files with ChaCha20-Poly1305 or AES-256-GCM under a random 256-bit data
// key of its own, kept in stream.key:
//
//	+------+---+------+-----+----+-------+-------------------+-----+
//	|"LFKY"|ver|cipher|state|rsvd| nonce | sealed data key   | tag |
//	+------+---+------+-----+----+-------+-------------------+-----+
//	   4     1    1      1    1     12            32            16
//
// sealed with a key derived from the server key (HKDF-SHA256, the cipher
// in the info) and the first 8 bytes as additional data. A wrong server
// key fails that one authentication at Open (ErrWrongKey); changing the
// server key (Encryption.PrevKey) re-seals stream.key only. State bit 0
// ("converting") is set while a plaintext stream is being converted.
//
// A sealed message record is kind 4: the fixed 40-byte header stays in
// the clear (subjLen and hdrLen give the plaintext lengths, length the
// size on disk), followed by a 12-byte nonce, subject, header and data
// sealed together, the 16-byte tag, and the crc32c. The whole fixed
// header (kind, lengths, sequence, time, ttl) is the additional data, so
// a record whose sequence or times were altered, or that was copied from
// another stream, fails to open. Nonces are an 8-byte random prefix,
// drawn at every Open and whenever the counter wraps, and a 4-byte
// counter: none repeats under a data key. Tombstones and erased records
// hold no message bytes and stay in the clear (crc32c only). A scan
// treats a sealed record that fails authentication, and a plaintext
// message in an encrypted stream, as corrupt, exactly like a checksum
// failure; a load returns ErrCorrupt. Index files are sealed whole
// ("LFSE", nonce, sealed index, tag; the block id is in the additional
// data) since they list subjects. S2 compression is refused with a
// cipher: sealed records do not compress.
//
// Turning encryption on for a plaintext stream writes stream.key marked
// converting, rewrites each block holding plaintext messages through a
// synced temporary file and a rename (removing its index file), then
// clears the mark; a crash in between leaves whole blocks of either kind
// and the next Open finishes. Turning it off is refused (ErrNoKey).
// Consumer logs do the same with consumer.key: sealed frames carry bit 0
// of their fourth byte, their payload is nonce, ciphertext and tag with
// the frame header as additional data, and a plaintext log is replaced by
// one sealed snapshot.
//
// The offline checks (VerifyWithKey, VerifyConsumerWithKey) open a
// directory's key file with the server key, or the previous one, without
// writing: no key file is created or sealed again. They then authenticate
// and decrypt every record, index file and frame as Open does, and report
// what fails as damage; a key that does not open the key file is
// ErrWrongKey, not damage (a key file whose seal was damaged looks the
// same, which is why `leafbox store verify` calls it damage only when the
// key opens the store's other key files).
//
// # Recovery
//
// Open lists the directory, removes *.tmp files and index files without a
// block, and reads every block: from its index file when the index names
// the block's id, stamp and flags, covers no more than the file holds and
// checksums the file's last 64 covered bytes; otherwise, or for the part of
// the active block written after the index, record by record. A record
// that fails its checks is skipped: the scan resumes at the next offset
// where a record with valid checksums starts, and the skipped bytes are
// counted as corrupt (Report.CorruptRecords, CorruptBytes). Bytes after the
// last good record of the active block are a torn tail: the file is
// truncated there and the loss reported (TruncatedBytes, DroppedRecords);
// in a sealed block the same bytes count as corruption. A block whose
// header fails is salvaged record by record, counted (CorruptBlocks) and
// later rewritten with a sound header. An empty or header-only last block
// is a creation cut short and is removed. Tombstones from all blocks are
// then applied, and limits and expiry enforced again. Corruption never
// makes Open fail; only I/O errors do.
//
// # Index files
//
// An index file caches the result of scanning one block, so Open need not
// read message bodies:
//
//	header (64 bytes): "LFIX", version, block flags, block id, stamp,
//	                   file size covered, raw length, max seq and its time,
//	                   crc32c of the last 64 covered bytes of the block,
//	                   offset of the tombstones section (version 2)
//	subjects:   count, then (length, bytes) in order of first use
//	messages:   count, then per message uvarint/varint deltas of seq, time
//	            and offset, the record length, the subject's index shifted
//	            left by one with bit 0 set when the message has a header,
//	            and ttl
//	tombstones: count, then (first seq, last-first)
//	chunks:     count, then (rawOff, rawLen, fileOff, compLen)
//	crc32c of everything before
//
// Index files are of version 2. Open still reads version 1, whose
// subject field is the plain index, whose header has zero where version
// 2 keeps the tombstones' offset, and which does not say which messages
// have a header: those messages count as possibly having one. The header
// flag lets LoadNextWithHeader (the rebuild of a JetStream duplicate
// window) pass over messages without a header without reading them, and
// over an evicted block none of whose live messages has one without
// loading its entries.
//
// Index files are written once per block: when it is sealed (or
// rewritten) and, for the active block, at Close and Checkpoint, always
// through a synced temporary file and a rename. An index that fails any
// check is ignored and rewritten from the block. Per-subject first, last
// and count are rebuilt from the messages at Open, which costs a map
// lookup per message. Open reads the index files one block at a time (a
// second time when it builds the block's entries), so it never holds more
// than one block's scan besides the index cache; the first read of a
// block before the last skips from the header to the tombstones, so the
// messages are decoded once, and one that fails its checks then has its
// block read record by record (counted as a stale index).
//
// # Writing, durability and SD-card wear
//
// Every change is an append to the active block: messages, and tombstones
// for removals, purges and evictions; purging everything starts a new block
// whose header carries the sequence and whose first record is one
// tombstone. No data block is rewritten for a delete. A block is sealed
// (fsynced) when it reaches BlockSize, and its file is removed once it
// holds no live message and no tombstone another block still needs.
// Removing or replacing a block file always waits until every write
// before it is durable, so a crash cannot make a removal durable that a
// failed operation reported as not done.
//
// With SyncInterval 0, Store writes its record and waits for an fsync that
// covers it; concurrent writers share fsyncs (group commit, see sync.go).
// With a SyncInterval, records are buffered (up to 64 KiB) and synced on
// the timer; a power cut loses at most that window, never older data.
// Removals the stream re-derives on Open (limits, MaxAge, TTL) write their
// tombstones lazily. An eviction a Store causes (MaxMsgsPerSubject, and
// MaxMsgs or MaxBytes under DiscardOld) writes its tombstone only after
// the fsync covering the new record, with the next write: a disk may
// write back one fsync's pages in any order, and keeping the tombstone
// without the record would lose the old message and its replacement.
// After a power cut every acknowledged message is there unless a limit
// evicted it for later messages that are there too; a one-per-subject key
// holds its last acknowledged value or a newer one.
//
// A maintenance goroutine writes the index files of sealed blocks,
// rewrites them with S2 when the stream compresses, compacts a sealed
// block once two thirds of it are dead (dropping dead records and
// tombstones no other block needs), and repairs blocks with a bad header.
// A rewrite goes to a synced temporary file renamed over the block, and is
// abandoned if the block changed meanwhile. Checkpoint runs all of it now.
//
// # Consumer log
//
// consumer.log is a sequence of frames, each
//
//	+-----+---+----+----+--------+---------+--------+
//	|magic|ver|kind|rsvd| length | payload | crc32c |
//	+-----+---+----+----+--------+---------+--------+
//	   1    1   1    1      4      length      4
//
// with magic 0xC7, kind 1 (snapshot of the whole state) or 2 (delta). A
// payload holds the delivered and ack-floor pairs, then pending and
// redelivery upserts and deletions as uvarints. Applying a delta drops the
// pending and redelivery entries at or below the new ack floor, so an ack
// that moves the floor costs about twenty bytes whatever it retires. When
// the log outgrows ConsumerConfig.CompactSize (and eight times its
// snapshot) it is replaced by one snapshot frame via a temporary file and a
// rename. Replay stops at the first bad frame; the rest is cut off and
// reported.
//
// # Concurrency and lock order
//
// Stream methods are safe for concurrent use. Locks are taken in this
// order: maintMu (maintenance and Close) → mu (the stream's state; readers
// take it shared) → fileMu (held shared around an fsync done without mu,
// exclusively to close a file) → fsyncMu (one fsync of the active block at
// a time) → syncMu (group-commit state). chunkCache.mu is a leaf. No lock
// is held while calling code outside the package.
//
// # Memory
//
// The index holds 32 bytes per live message of the active block and of
// the sealed blocks the index cache keeps (Config.IndexCache, 2 MiB by
// default; Stream.SetIndexCache shrinks it); every other sealed block
// keeps a summary of about 200 bytes (counts, sequence bounds, the gaps in
// its live range, the ids of up to 64 subjects it holds, which let
// filtered queries skip it) and loads its entries from its index file
// when a query or a change reaches it (cache.go). Per subject the stream
// keeps one entry with its count and bounds. Loads from uncompressed blocks read a
// 256 KiB window per pread and keep the last two; loads from S2 blocks
// decode one chunk and keep the last four. A Load copies header and data
// into the caller's Msg.Buf when one is lent, allocating nothing, else
// into one new allocation.
package filestore
