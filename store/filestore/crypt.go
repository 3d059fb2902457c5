package filestore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// Cipher selects the AEAD that seals a store's files.
type Cipher uint8

const (
	// CipherNone stores everything in plaintext.
	CipherNone Cipher = iota
	// CipherChaCha seals with ChaCha20-Poly1305 (fast without AES
	// instructions, as on most Raspberry Pi boards).
	CipherChaCha
	// CipherAES seals with AES-256-GCM.
	CipherAES
)

// String returns "none", "chachapoly" or "aes", the names ParseCipher
// and the configuration use.
func (c Cipher) String() string {
	switch c {
	case CipherNone:
		return "none"
	case CipherChaCha:
		return "chachapoly"
	case CipherAES:
		return "aes"
	}
	return fmt.Sprintf("cipher(%d)", uint8(c))
}

// ParseCipher parses a cipher name as nats-server's jetstream.cipher
// spells it: "chachapoly" (or "chacha"), "aes", or "" and "none".
func ParseCipher(s string) (Cipher, error) {
	switch s {
	case "", "none":
		return CipherNone, nil
	case "chachapoly", "chacha", "chacha20poly1305":
		return CipherChaCha, nil
	case "aes", "aes-gcm", "aesgcm":
		return CipherAES, nil
	}
	return CipherNone, fmt.Errorf("%w: filestore: unknown cipher %q (want chachapoly or aes)", store.ErrInvalidConfig, s)
}

// MinKeyLen is the shortest server key Encryption accepts.
const MinKeyLen = 16

// Encryption configures encryption at rest. The zero value stores
// plaintext. Key is the server key; it never leaves the process and is
// never shown by String or in an error.
type Encryption struct {
	// Cipher seals records, index files and consumer logs.
	Cipher Cipher
	// Key is the server key (at least MinKeyLen bytes, ideally 32 random
	// ones). It seals only each directory's small data key file, so
	// changing it rewrites that file, never the data.
	Key []byte
	// PrevKey, when set, is tried if Key does not open a data key file;
	// the file is then sealed again with Key. It is how a key is changed.
	PrevKey []byte
}

// Enabled reports whether a cipher is set.
func (e Encryption) Enabled() bool { return e.Cipher != CipherNone }

// Validate reports an impossible setting as an error wrapping
// store.ErrInvalidConfig. It names no key bytes.
func (e Encryption) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: filestore: "+format, append([]any{store.ErrInvalidConfig}, args...)...)
	}
	switch {
	case e.Cipher != CipherNone && e.Cipher != CipherChaCha && e.Cipher != CipherAES:
		return bad("unknown cipher %d", e.Cipher)
	case e.Cipher == CipherNone && (len(e.Key) > 0 || len(e.PrevKey) > 0):
		return bad("a key is set but no cipher")
	case e.Cipher != CipherNone && len(e.Key) < MinKeyLen:
		return bad("the %s key is %d bytes, want at least %d", e.Cipher, len(e.Key), MinKeyLen)
	case len(e.PrevKey) > 0 && len(e.PrevKey) < MinKeyLen:
		return bad("the previous key is %d bytes, want at least %d", len(e.PrevKey), MinKeyLen)
	}
	return nil
}

// String shows the cipher only.
func (e Encryption) String() string { return e.Cipher.String() }

// ErrWrongKey means the configured key does not open a directory's data
// key file: the store was encrypted with another key. Nothing is read or
// changed.
var ErrWrongKey = errors.New("filestore: wrong key")

// ErrNoKey means a directory is encrypted but no cipher and key are
// configured.
var ErrNoKey = errors.New("filestore: store is encrypted and no key is configured")

const (
	nonceLen = 12
	tagLen   = 16
	// sealOverhead is what sealing adds to a record or frame: the nonce
	// and the authentication tag.
	sealOverhead = nonceLen + tagLen
	dataKeyLen   = 32

	streamKeyName   = "stream.key"
	consumerKeyName = "consumer.key"
	keyFileMagic    = "LFKY"
	keyFileLen      = 8 + nonceLen + dataKeyLen + tagLen
	// keyConverting marks a key file written before the files it keys
	// were all converted from plaintext.
	keyConverting = 1 << 0
)

var errBadSeal = fmt.Errorf("%w: filestore: sealed data fails authentication", store.ErrCorrupt)

// sealer seals with one data key. Nonces are an 8-byte random prefix and
// a 4-byte counter; the prefix is drawn again whenever the counter wraps
// and at every Open, so no nonce repeats under a key unless two 64-bit
// random draws collide. It is safe for concurrent use.
type sealer struct {
	aead cipher.AEAD
	// acceptPlain lets admit take plaintext messages too; only the
	// offline verifier sets it, on its own sealer of a directory whose
	// conversion to encrypted did not finish (Open converts them).
	acceptPlain bool

	mu      sync.Mutex
	prefix  [8]byte
	counter uint32
}

func newAEAD(c Cipher, key []byte) (cipher.AEAD, error) {
	switch c {
	case CipherChaCha:
		return chacha20poly1305.New(key)
	case CipherAES:
		blk, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(blk)
	}
	return nil, fmt.Errorf("filestore: no AEAD for %s", c)
}

func newSealer(c Cipher, key []byte) (*sealer, error) {
	a, err := newAEAD(c, key)
	if err != nil {
		return nil, err
	}
	k := &sealer{aead: a}
	rand.Read(k.prefix[:])
	return k, nil
}

// appendNonce appends a fresh nonce to dst.
func (k *sealer) appendNonce(dst []byte) []byte {
	k.mu.Lock()
	if k.counter == 0xFFFFFFFF {
		rand.Read(k.prefix[:])
		k.counter = 0
	}
	k.counter++
	dst = append(dst, k.prefix[:]...)
	dst = binary.BigEndian.AppendUint32(dst, k.counter)
	k.mu.Unlock()
	return dst
}

// sealTo appends nonce, ciphertext and tag of plain to dst with aad.
// plain must not overlap dst's free capacity.
func (k *sealer) sealTo(dst, plain, aad []byte) []byte {
	dst = k.appendNonce(dst)
	nonce := dst[len(dst)-nonceLen:]
	return k.aead.Seal(dst, nonce, plain, aad)
}

// open returns the plaintext of sealed (nonce, ciphertext, tag), appended
// to dst; any failure is errBadSeal.
func (k *sealer) open(dst, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < sealOverhead {
		return nil, errBadSeal
	}
	pt, err := k.aead.Open(dst, sealed[:nonceLen], sealed[nonceLen:], aad)
	if err != nil {
		return nil, errBadSeal
	}
	return pt, nil
}

// Sealed message records (kind 4) keep the 40-byte fixed header in the
// clear, with subjLen and hdrLen giving the plaintext lengths and length
// the record's size on disk; the body is nonce, the sealed subject,
// header and data, and the tag, authenticated with the fixed header
// (kind, lengths, sequence, time, ttl) as additional data. The crc32c
// still ends the record, so torn writes and bit rot are told apart from
// noise exactly as for plaintext records.

// appendSealedRecord appends a sealed message record to dst.
func appendSealedRecord(dst []byte, k *sealer, seq uint64, ts, ttl int64, subject string, hdr, data []byte) []byte {
	n := recordLen(subject, hdr, data) + sealOverhead
	dst = slices.Grow(dst, n)
	start := len(dst)
	dst = appendRecordHeader(dst, kindSealed, uint16(len(subject)), uint32(n), uint32(len(hdr)), seq, uint64(ts), uint64(ttl))
	dst = k.appendNonce(dst)
	pt := len(dst)
	dst = append(dst, subject...)
	dst = append(dst, hdr...)
	dst = append(dst, data...)
	// In place: Seal's output exactly overlaps the plaintext, and the
	// capacity reserved above takes the tag.
	sealed := k.aead.Seal(dst[pt:pt], dst[pt-nonceLen:pt], dst[pt:], dst[start:start+recordHeaderLen])
	dst = dst[:pt+len(sealed)]
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// openRecord authenticates and decrypts the sealed record rec, parsed
// into r, appending the plaintext to dst; r's subject, header and data
// then point into the result and its kind becomes kindMsg.
func (k *sealer) openRecord(dst, rec []byte, r *record) ([]byte, error) {
	pt, err := k.open(dst, r.sealed, rec[:recordHeaderLen])
	if err != nil {
		return nil, err
	}
	body := pt[len(dst):]
	if len(body) < r.subjLen+r.hdrLen {
		return nil, errBadSeal
	}
	h := r.subjLen + r.hdrLen
	r.subject = body[:r.subjLen:r.subjLen]
	r.header = body[r.subjLen:h:h]
	r.data = body[h:len(body):len(body)]
	r.kind, r.sealed = kindMsg, nil
	return pt, nil
}

// admit checks a record found by a scan against the stream's sealing (k
// nil: plaintext) and opens a sealed message into *scratch. It reports
// false for a record that cannot belong: a sealed message that fails
// authentication or sits in a plaintext stream, or a plaintext message
// in a sealed one (which would let anyone with the card add messages).
func (k *sealer) admit(rec []byte, r *record, scratch *[]byte) bool {
	switch {
	case r.kind == kindSealed && k != nil:
		pt, err := k.openRecord((*scratch)[:0], rec, r)
		if err != nil {
			return false
		}
		*scratch = pt
	case r.kind == kindSealed, r.kind == kindMsg && k != nil && !k.acceptPlain:
		return false
	}
	return true
}

// scanOpen is scanRecords for a stream sealed with k (nil: plaintext).
// Sealed messages reach fn decrypted, their slices valid until fn
// returns; records admit refuses are counted as corrupt and skipped.
func scanOpen(b []byte, k *sealer, fn func(off int, r *record)) scanResult {
	var scratch []byte
	var bad, firstBad int
	var badBytes int64
	res := scanRecords(b, func(off int, r *record) {
		n := r.len()
		if !k.admit(b[off:off+n], r, &scratch) {
			if bad == 0 {
				firstBad = off
			}
			bad++
			badBytes += int64(n)
			return
		}
		fn(off, r)
	})
	if bad > 0 {
		res.noteBad(firstBad)
	}
	res.corruptRecords += bad
	res.corruptBytes += badBytes
	res.refused += bad
	return res
}

// Sealed files (index files, consumer snapshots written by conversion)
// are "LFSE", the nonce, and the sealed content with tag, authenticated
// with the magic and a per-file label.
const sealedFileMagic = "LFSE"

// sealFile seals a whole file's content.
func (k *sealer) sealFile(plain []byte, label string) []byte {
	dst := make([]byte, 0, len(sealedFileMagic)+sealOverhead+len(plain))
	dst = append(dst, sealedFileMagic...)
	return k.sealTo(dst, plain, []byte(sealedFileMagic+label))
}

// openFile returns the content of a file sealFile wrote.
func (k *sealer) openFile(b []byte, label string) ([]byte, error) {
	if len(b) < len(sealedFileMagic) || string(b[:len(sealedFileMagic)]) != sealedFileMagic {
		return nil, errBadSeal
	}
	return k.open(nil, b[len(sealedFileMagic):], []byte(sealedFileMagic+label))
}

// keyEncryptionKey derives the key that seals data key files from the
// server key and the cipher.
func keyEncryptionKey(c Cipher, serverKey []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, serverKey, nil, "leafbox filestore data key v1 "+c.String(), 32)
}

// keyFile is a decoded data key file.
type keyFile struct {
	cipher     Cipher
	converting bool
	dataKey    []byte
}

// sealKeyFile encodes kf sealed with serverKey.
func sealKeyFile(kf keyFile, serverKey []byte) ([]byte, error) {
	kek, err := keyEncryptionKey(kf.cipher, serverKey)
	if err != nil {
		return nil, err
	}
	a, err := newAEAD(kf.cipher, kek)
	if err != nil {
		return nil, err
	}
	var state byte
	if kf.converting {
		state |= keyConverting
	}
	b := make([]byte, 0, keyFileLen)
	b = append(b, keyFileMagic...)
	b = append(b, formatVersion, byte(kf.cipher), state, 0)
	b = b[:8+nonceLen]
	rand.Read(b[8:])
	return a.Seal(b, b[8:8+nonceLen], kf.dataKey, b[:8]), nil
}

// openKeyFile decodes a data key file with serverKey. A file that is not
// a key file wraps store.ErrCorrupt; a key that does not open it is
// ErrWrongKey.
func openKeyFile(b, serverKey []byte) (keyFile, error) {
	if len(b) != keyFileLen || string(b[:4]) != keyFileMagic || b[4] != formatVersion || b[7] != 0 || b[6]&^keyConverting != 0 {
		return keyFile{}, fmt.Errorf("%w: filestore: not a data key file", store.ErrCorrupt)
	}
	kf := keyFile{cipher: Cipher(b[5]), converting: b[6]&keyConverting != 0}
	if kf.cipher != CipherChaCha && kf.cipher != CipherAES {
		return keyFile{}, fmt.Errorf("%w: filestore: data key file names unknown cipher %d", store.ErrCorrupt, b[5])
	}
	kek, err := keyEncryptionKey(kf.cipher, serverKey)
	if err != nil {
		return keyFile{}, err
	}
	a, err := newAEAD(kf.cipher, kek)
	if err != nil {
		return keyFile{}, err
	}
	kf.dataKey, err = a.Open(nil, b[8:8+nonceLen], b[8+nonceLen:], b[:8])
	if err != nil {
		return keyFile{}, ErrWrongKey
	}
	return kf, nil
}

// dirKey is the outcome of loading a directory's data key.
type dirKey struct {
	sealer *sealer
	// convert says the directory's files may still hold plaintext that
	// must be converted before use; the key file says so until
	// finishConversion.
	convert bool
	// created says the key file was made by this open: sealed data
	// found now belongs to a key that is lost (see errLostKey).
	created bool
	name    string
	kf      keyFile
}

// errLostKey is returned when a directory without a data key file holds
// sealed data: its key file was removed, and the data cannot be opened.
var errLostKey = fmt.Errorf("%w (its data key file is missing: restore it from a backup)", ErrNoKey)

// discard removes a key file this open created, after errLostKey.
func (dk *dirKey) discard(fsys vfs.FS) {
	if dk.created {
		_ = removeIfExists(fsys, dk.name)
	}
}

// loadDirKey opens the data key file keyName in dir for enc, or creates
// one. exists reports whether dir already holds data, so a new key file
// for it is marked converting. The result's sealer is nil for a
// plaintext store. Errors name the file, never a key.
func loadDirKey(fsys vfs.FS, dir, keyName string, enc Encryption, exists bool) (dirKey, error) {
	name := filepath.Join(dir, keyName)
	dk := dirKey{name: name}
	b, err := readFile(fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !enc.Enabled() {
			return dk, nil
		}
		dk.kf = keyFile{cipher: enc.Cipher, converting: exists, dataKey: make([]byte, dataKeyLen)}
		rand.Read(dk.kf.dataKey)
		if err := writeKeyFile(fsys, name, dk.kf, enc.Key); err != nil {
			return dk, err
		}
		dk.created = true
	case err != nil:
		return dk, fmt.Errorf("filestore: %s: %w", name, err)
	case !enc.Enabled():
		return dk, fmt.Errorf("%w: %s holds %s", ErrNoKey, dir, keyName)
	default:
		kf, err := openKeyFile(b, enc.Key)
		if errors.Is(err, ErrWrongKey) && len(enc.PrevKey) > 0 {
			if kf, err = openKeyFile(b, enc.PrevKey); err == nil {
				// Changing the key re-seals this file only.
				if err := writeKeyFile(fsys, name, kf, enc.Key); err != nil {
					return dk, err
				}
			}
		}
		if errors.Is(err, ErrWrongKey) {
			return dk, fmt.Errorf("%w: %s: the key does not open %s", ErrWrongKey, dir, keyName)
		}
		if err != nil {
			return dk, fmt.Errorf("filestore: %s: %w", name, err)
		}
		if kf.cipher != enc.Cipher {
			return dk, fmt.Errorf("%w: filestore: %s was encrypted with %s, the configuration says %s; converting between ciphers is not supported",
				store.ErrInvalidConfig, dir, kf.cipher, enc.Cipher)
		}
		dk.kf = kf
	}
	dk.convert = dk.kf.converting
	s, err := newSealer(dk.kf.cipher, dk.kf.dataKey)
	if err != nil {
		return dk, err
	}
	dk.sealer = s
	return dk, nil
}

// finishConversion clears the converting mark once every file is sealed.
func (dk *dirKey) finishConversion(fsys vfs.FS, enc Encryption) error {
	if !dk.kf.converting {
		return nil
	}
	dk.kf.converting = false
	dk.convert = false
	return writeKeyFile(fsys, dk.name, dk.kf, enc.Key)
}

func writeKeyFile(fsys vfs.FS, name string, kf keyFile, serverKey []byte) error {
	b, err := sealKeyFile(kf, serverKey)
	if err != nil {
		return err
	}
	if err := vfs.WriteFilePerm(fsys, name, b, vfs.PermSecret); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}
