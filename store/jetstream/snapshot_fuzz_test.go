package jetstream

import (
	"archive/tar"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// fuzzArchive is a small valid archive: two segments' worth of messages
// with a gap, and a consumer.
func fuzzArchive(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	sw, err := newSnapshotWriter(&buf, "S")
	if err != nil {
		tb.Fatal(err)
	}
	if err := sw.writeJSON(entryStream, snapshotStream{Config: jsapi.StreamConfig{Name: "S", Subjects: []string{"s.>"}}, Created: time.Unix(1, 0).UTC(),
		State: snapshotState{Msgs: 3, FirstSeq: 2, LastSeq: 9}}); err != nil {
		tb.Fatal(err)
	}
	for _, seq := range []uint64{2, 3, 7} {
		m := store.Msg{Seq: seq, Time: int64(seq), Subject: "s.a", Header: []byte("NATS/1.0\r\nA: b\r\n\r\n"), Data: []byte("payload")}
		if err := sw.addMsg(&m); err != nil {
			tb.Fatal(err)
		}
	}
	if err := sw.addConsumer(snapshotConsumer{Name: "C", Config: jsapi.ConsumerConfig{Durable: "C"},
		State: snapshotConsumerState{Delivered: snapshotSeqPair{1, 2}, Pending: []snapshotPending{{Stream: 2, Consumer: 1, Timestamp: 5}}}}); err != nil {
		tb.Fatal(err)
	}
	if err := sw.close(1); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// readArchive reads a whole archive as a restore does, without a store.
func readArchive(data []byte) (msgs []store.Msg, consumers []*snapshotConsumer, err error) {
	rd, err := openSnapshot(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	for {
		seg, err := rd.nextSegment()
		if err != nil {
			return nil, nil, err
		}
		if seg == nil {
			break
		}
		if err := rd.eachMsg(seg, func(m *store.Msg) error {
			msgs = append(msgs, store.Msg{Seq: m.Seq, Subject: m.Subject, Header: bytes.Clone(m.Header), Data: bytes.Clone(m.Data)})
			return nil
		}); err != nil {
			return nil, nil, err
		}
	}
	for {
		c, err := rd.nextConsumer()
		if err != nil {
			return nil, nil, err
		}
		if c == nil {
			return msgs, consumers, nil
		}
		consumers = append(consumers, c)
	}
}

// The archive reader never panics, and whatever it accepts has
// increasing sequences and the counts its trailer states.
func FuzzSnapshotArchive(f *testing.F) {
	valid := fuzzArchive(f)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, _, err := readArchive(data)
		if err != nil {
			if !errors.Is(err, ErrSnapshotFormat) && !errors.Is(err, ErrSnapshotNATSServer) {
				t.Fatalf("error %v is neither ErrSnapshotFormat nor ErrSnapshotNATSServer", err)
			}
			return
		}
		for i := 1; i < len(msgs); i++ {
			if msgs[i].Seq <= msgs[i-1].Seq {
				t.Fatalf("accepted sequences out of order: %d after %d", msgs[i].Seq, msgs[i-1].Seq)
			}
		}
	})
}

// A record decodes to what was encoded, and a decoder given any bytes
// returns an error or a record inside them.
func FuzzSnapshotRecord(f *testing.F) {
	f.Add(uint64(1), int64(2), "a.b", []byte("NATS/1.0\r\n\r\n"), []byte("x"), []byte{})
	f.Add(uint64(1<<60), int64(-1), "x", []byte(nil), []byte(nil), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30})
	f.Fuzz(func(t *testing.T, seq uint64, ts int64, subj string, hdr, data, noise []byte) {
		var m store.Msg
		if n, err := parseSnapshotRecord(noise, &m); err == nil && (n > len(noise) || n <= 0) {
			t.Fatalf("parsed %d bytes of %d", n, len(noise))
		}
		if seq == 0 || subj == "" || len(subj) > 0xffff {
			return
		}
		rec := appendRecord(nil, &store.Msg{Seq: seq, Time: ts, Subject: subj, Header: hdr, Data: data})
		n, err := parseSnapshotRecord(rec, &m)
		if err != nil || n != len(rec) {
			t.Fatalf("round trip: %d of %d bytes, %v", n, len(rec), err)
		}
		if m.Seq != seq || m.Time != ts || m.Subject != subj || !bytes.Equal(m.Header, hdr) || !bytes.Equal(m.Data, data) {
			t.Fatalf("round trip changed the record: %+v", m)
		}
	})
}

// The valid archive reads back as written.
func TestSnapshotArchiveReadsBack(t *testing.T) {
	msgs, cons, err := readArchive(fuzzArchive(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[2].Seq != 7 || string(msgs[0].Data) != "payload" || len(cons) != 1 || cons[0].State.Pending[0].Timestamp != 5 {
		t.Fatalf("read back %+v %+v", msgs, cons)
	}
}

// nats-server's older tar layout (meta.inf, msgs/N.blk, obs/) is
// recognised and refused like its NATSARC1 archive.
func TestSnapshotRefusesNATSServerTar(t *testing.T) {
	for _, first := range []string{"meta.inf", "msgs/1.blk", "obs/C/meta.inf"} {
		var buf bytes.Buffer
		sw := s2.NewWriter(&buf)
		tw := tar.NewWriter(sw)
		if err := tw.WriteHeader(&tar.Header{Name: first, Mode: 0o600, Size: 2, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte("{}")); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := openSnapshot(&buf)
		if !errors.Is(err, ErrSnapshotNATSServer) || !strings.Contains(err.Error(), first) {
			t.Fatalf("%s: %v", first, err)
		}
	}
}
