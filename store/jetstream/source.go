package jetstream

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Sources and mirrors, shaped as nats-server's: each origin is read
// through an internal push consumer (ack none, flow control, idle
// heartbeats) created with the origin's JS API over the Bus, so a local
// stream and a hub stream reached over the leaf link ("$JS.<domain>.API")
// take the same path. A source stores each message with a
// Nats-Stream-Source header naming the origin and its sequence; a mirror
// stores each message at the origin's sequence. Both resume from what is
// stored: the last header of the source, the mirror's last sequence.

const (
	// sourceHeartbeat is the idle heartbeat asked of the origin consumer.
	sourceHeartbeat = time.Second
	// sourceStale is how long without a message or heartbeat before the
	// consumer is recreated (the origin or the link went away).
	sourceStale = 3 * sourceHeartbeat
	// sourceInactive lets the origin drop an abandoned consumer.
	sourceInactive = 10 * time.Second
	// sourceRequestTimeout bounds a consumer create request.
	sourceRequestTimeout = 2 * time.Second
	// sourceRetryMax caps the backoff between failed creates.
	sourceRetryMax = 2 * time.Second
	// sourceRetryMin is the least time between two creates.
	sourceRetryMin = 250 * time.Millisecond
)

// sourceSet is the running sourcers of a stream.
type sourceSet struct {
	mu   sync.Mutex
	list []*sourcer
}

// sourcer copies one origin into its stream.
type sourcer struct {
	s      *stream
	cfg    jsapi.StreamSource
	mirror bool
	// iname is nats-server's index name: "<name>[:<api hash>] <filters>
	// <destinations>"; ident its first field, filter and dest the rest.
	iname, ident, filter, dest string
	// legacyIname is iname with the API hash as leafbox wrote it before
	// it matched nats-server's (see legacyHash); "" for a local origin.
	legacyIname string
	api         string
	trs         []*srcTransform

	// last is when the origin was last heard from (Unix ns, 0: never).
	last atomic.Int64
	// retry asks the run loop to recreate the consumer.
	retry chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	stopped bool
	sseq    uint64 // last origin sequence stored
	dseq    uint64 // last consumer sequence seen
	lag     uint64
	err     *jsapi.APIError
	cname   string
	deliver string
	unsub   func()
	// origin is the origin's identity (nats-server's Nats-Stream-Identity,
	// a hash of its creation time), stored as the sixth field of the
	// Nats-Stream-Source header; a different one means the origin was
	// recreated and copying starts over.
	origin string
	// awaiting holds deliveries in queue until the create response.
	awaiting bool
	queue    []queuedMsg
}

// newSourcer prepares the sourcer of one origin.
func newSourcer(s *stream, cfg jsapi.StreamSource, mirror bool) (*sourcer, error) {
	sc := &sourcer{s: s, cfg: cfg, mirror: mirror, api: jsapi.APIPrefix, retry: make(chan struct{}, 1), done: make(chan struct{})}
	if cfg.External != nil && cfg.External.APIPrefix != "" {
		sc.api = strings.TrimSuffix(cfg.External.APIPrefix, ".")
	}
	sc.ident = cfg.Name
	legacyIdent := ""
	if cfg.External != nil {
		h := apiHash(cfg.External.APIPrefix)
		sc.ident += ":" + h
		legacyIdent = cfg.Name + ":" + legacyHash(h)
	}
	sc.filter, sc.dest = cfg.FilterSubject, ">"
	if sc.filter == "" {
		sc.filter = ">"
	}
	if len(cfg.SubjectTransforms) > 0 {
		var srcs, dsts []string
		for _, tr := range cfg.SubjectTransforms {
			src, dst := tr.Source, tr.Destination
			if src == "" {
				src = ">"
			}
			if dst == "" {
				dst = ">"
			}
			srcs, dsts = append(srcs, src), append(dsts, dst)
			t, err := newSrcTransform(src, tr.Destination)
			if err != nil {
				return nil, err
			}
			sc.trs = append(sc.trs, t)
		}
		sc.filter, sc.dest = strings.Join(srcs, "\f"), strings.Join(dsts, "\f")
	}
	sc.iname = sc.ident + " " + sc.filter + " " + sc.dest
	if legacyIdent != "" {
		sc.legacyIname = legacyIdent + " " + sc.filter + " " + sc.dest
	}
	return sc, nil
}

// apiHash is nats-server's 8-character hash of an external API prefix,
// as it appears in index names and Nats-Stream-Source headers, and of a
// stream's creation time (its identity): the first 8 bytes of the
// SHA-256, each taken modulo 62 into nats-server's digits (upper case
// before lower case).
func apiHash(name string) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := sha256.Sum256([]byte(name))
	out := make([]byte, 8)
	for i := range out {
		out[i] = digits[int(b[i]%62)]
	}
	return string(out)
}

// legacyHash is what leafbox before it matched nats-server stored for
// the hash h: its digits listed lower case first, so each letter has the
// other case. Stores written then still hold such headers; resuming
// from them must not copy again what they hold.
func legacyHash(h string) string {
	b := []byte(h)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// sameIdentity reports whether the stored origin identity stored is the
// origin identity ident, in nats-server's spelling or leafbox's legacy one.
func sameIdentity(ident, stored string) bool {
	return ident == stored || legacyHash(ident) == stored
}

// startSources starts the stream's mirror or sources, resuming each
// from what the store holds. It does nothing when they already run.
func (s *stream) startSources() {
	cfg := s.config()
	if cfg.Mirror == nil && len(cfg.Sources) == 0 {
		return
	}
	s.srcs.mu.Lock()
	defer s.srcs.mu.Unlock()
	if len(s.srcs.list) > 0 {
		return
	}
	var list []*sourcer
	if cfg.Mirror != nil {
		sc, err := newSourcer(s, *cfg.Mirror, true)
		if err != nil {
			s.eng.log.Error("jetstream: mirror", "stream", s.name, "err", err)
			return
		}
		list = append(list, sc)
	}
	for _, src := range cfg.Sources {
		if src == nil {
			continue
		}
		sc, err := newSourcer(s, *src, false)
		if err != nil {
			s.eng.log.Error("jetstream: source", "stream", s.name, "source", src.Name, "err", err)
			continue
		}
		list = append(list, sc)
	}
	s.srcs.list = list
	// The resume scan takes s.mu: not on the caller's goroutine, which
	// may hold the engine's lock.
	go func() {
		s.resumePoints(list)
		for _, sc := range list {
			go sc.run()
		}
	}()
}

// stopSources stops every sourcer; none stores anything once it returns.
func (s *stream) stopSources() {
	s.srcs.mu.Lock()
	list := s.srcs.list
	s.srcs.list = nil
	s.srcs.mu.Unlock()
	for _, sc := range list {
		sc.stop()
	}
}

// restartSources applies a changed configuration.
func (s *stream) restartSources() {
	s.stopSources()
	s.startSources()
}

// resumePoints sets each sourcer's last origin sequence from the store:
// a mirror's last sequence, or the newest Nats-Stream-Source header of
// each source, scanning back from the end.
func (s *stream) resumePoints(list []*sourcer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.store.State()
	want := map[string]*sourcer{}
	for _, sc := range list {
		if sc.mirror {
			sc.mu.Lock()
			sc.sseq = st.LastSeq
			sc.mu.Unlock()
			continue
		}
		want[sc.iname] = sc
		if sc.legacyIname != "" {
			want[sc.legacyIname] = sc
		}
	}
	if len(want) == 0 || st.Msgs == 0 {
		return
	}
	var sm store.Msg
	for seq := st.LastSeq; seq >= st.FirstSeq && seq > 0 && len(want) > 0; seq-- {
		m, err := s.store.Load(seq, &sm)
		if err != nil {
			continue
		}
		iname, oseq, ident, ok := parseSourceHeader(proto.HeaderValue(m.Header, jsapi.HeaderStreamSource))
		if !ok {
			continue
		}
		if sc := want[iname]; sc != nil {
			sc.mu.Lock()
			sc.sseq, sc.origin = oseq, ident
			sc.mu.Unlock()
			delete(want, sc.iname)
			delete(want, sc.legacyIname)
		}
	}
}

// parseSourceHeader reads "<name> <seq> <filter> <dest> <subject>
// [<identity>]" and returns the index name, the origin sequence and the
// origin's identity.
func parseSourceHeader(v []byte) (iname string, seq uint64, ident string, ok bool) {
	f := strings.Split(string(v), " ")
	if len(f) < 4 {
		return "", 0, "", false
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return "", 0, "", false
	}
	if len(f) >= 6 {
		ident = f[5]
	}
	return f[0] + " " + f[2] + " " + f[3], seq, ident, true
}

// headerStreamIdentity carries a stream's identity in consumer create
// responses (nats-server's Nats-Stream-Identity).
const headerStreamIdentity = "Nats-Stream-Identity"

// streamIdentity is nats-server's identity of a stream: the hash of its
// creation time.
func streamIdentity(created time.Time) string {
	return apiHash(created.UTC().Format(time.RFC3339Nano))
}

// stop ends the sourcer and deletes its origin consumer (best effort).
func (sc *sourcer) stop() {
	sc.mu.Lock()
	if sc.stopped {
		sc.mu.Unlock()
		return
	}
	sc.stopped = true
	unsub, cname := sc.unsub, sc.cname
	sc.unsub = nil
	sc.mu.Unlock()
	close(sc.done)
	if unsub != nil {
		unsub()
	}
	if cname != "" {
		// Off the caller's goroutine: stop runs under engine and stream
		// locks that a local origin's API handler takes.
		go sc.s.eng.bus.Publish(sc.api+".CONSUMER.DELETE."+sc.cfg.Name+"."+cname, "", nil, nil)
	}
}

// run creates the origin consumer and recreates it whenever the stream
// of deliveries breaks (gap, stale, failed create), until stopped.
func (sc *sourcer) run() {
	backoff := 100 * time.Millisecond
	tick := time.NewTicker(sourceHeartbeat / 2)
	defer tick.Stop()
	var lastTry time.Time
	for {
		// Recreates are throttled, as nats-server's are: a message the
		// stream keeps refusing must not spin consumer creates.
		if wait := sourceRetryMin - time.Since(lastTry); !lastTry.IsZero() && wait > 0 {
			select {
			case <-sc.done:
				return
			case <-time.After(wait):
			}
		}
		lastTry = time.Now()
		if err := sc.connect(); err != nil {
			sc.mu.Lock()
			if sc.stopped {
				sc.mu.Unlock()
				return
			}
			sc.err = err
			sc.mu.Unlock()
			select {
			case <-sc.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, sourceRetryMax)
			continue
		}
		backoff = 100 * time.Millisecond
	watch:
		for {
			select {
			case <-sc.done:
				return
			case <-sc.retry:
				break watch
			case <-tick.C:
				if time.Since(time.Unix(0, sc.last.Load())) > sourceStale {
					break watch
				}
			}
		}
	}
}

// errSourceClosed reports a create attempted after stop.
var errSourceClosed = errors.New("jetstream: source stopped")

// connect replaces the origin consumer with one delivering from the
// sequence after the last one stored.
func (sc *sourcer) connect() *jsapi.APIError {
	bus := sc.s.eng.bus
	sc.mu.Lock()
	if sc.stopped {
		sc.mu.Unlock()
		return jsapi.NewStreamCreateError(errSourceClosed)
	}
	oldUnsub, oldName := sc.unsub, sc.cname
	sc.unsub, sc.cname = nil, ""
	start := sc.sseq + 1
	sc.dseq = 0
	sc.mu.Unlock()
	if oldUnsub != nil {
		oldUnsub()
	}
	if oldName != "" {
		bus.Publish(sc.api+".CONSUMER.DELETE."+sc.cfg.Name+"."+oldName, "", nil, nil)
	}

	id := randToken(8)
	deliver := "$JS.S." + id
	if sc.mirror {
		deliver = "$JS.M." + id
	}
	if ext := sc.cfg.External; ext != nil && ext.DeliverPrefix != "" {
		deliver = strings.TrimSuffix(ext.DeliverPrefix, ".") + "." + deliver[4:]
	}
	name := "JS_SRC_" + id
	if sc.mirror {
		name = "JS_MIRROR_" + id
	}
	cc := jsapi.ConsumerConfig{
		Name: name, DeliverSubject: deliver, AckPolicy: jsapi.AckNone, AckWait: 22 * time.Hour, MaxDeliver: 1,
		Heartbeat: sourceHeartbeat, FlowControl: true, Direct: true, InactiveThreshold: sourceInactive,
		Metadata: map[string]string{"_nats.src.stream": sc.s.name},
	}
	if d := sc.s.eng.cfg.Domain; d != "" {
		cc.Metadata["_nats.src.domain"] = d
	}
	switch {
	case start > 1:
		cc.DeliverPolicy, cc.OptStartSeq = jsapi.DeliverByStartSequence, start
	case sc.cfg.OptStartSeq > 0:
		cc.DeliverPolicy, cc.OptStartSeq = jsapi.DeliverByStartSequence, sc.cfg.OptStartSeq
	case sc.cfg.OptStartTime != nil:
		cc.DeliverPolicy, cc.OptStartTime = jsapi.DeliverByStartTime, sc.cfg.OptStartTime
	}
	cc.FilterSubject = sc.cfg.FilterSubject
	for _, tr := range sc.cfg.SubjectTransforms {
		if tr.Source != "" {
			cc.FilterSubjects = append(cc.FilterSubjects, tr.Source)
		}
	}
	if len(cc.FilterSubjects) == 1 && cc.FilterSubject == "" {
		cc.FilterSubject, cc.FilterSubjects = cc.FilterSubjects[0], nil
	}
	body, _ := json.Marshal(jsapi.ConsumerCreateRequest{Stream: sc.cfg.Name, Config: cc})

	unsub, err := bus.Subscribe(deliver, "", sc.handleMsg)
	if err != nil {
		return jsapi.NewStreamCreateError(err)
	}
	sc.mu.Lock()
	if sc.stopped {
		sc.mu.Unlock()
		unsub()
		return jsapi.NewStreamCreateError(errSourceClosed)
	}
	sc.unsub, sc.cname, sc.deliver = unsub, name, deliver
	sc.awaiting, sc.queue = true, nil
	sc.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			sc.drain(true)
		}
	}()

	type reply struct{ ident, data []byte }
	resp := make(chan reply, 1)
	inbox := "_INBOX.jssrc." + randToken(12)
	unsubReply, err := bus.Subscribe(inbox, "", func(_, _, hdr, data []byte) {
		select {
		case resp <- reply{bytesClone(proto.HeaderValue(hdr, headerStreamIdentity)), bytesClone(data)}:
		default:
		}
	})
	if err != nil {
		return jsapi.NewStreamCreateError(err)
	}
	defer unsubReply()
	// A local origin's identity is known before its first delivery; a
	// remote one's comes with the create response.
	var localIdent string
	if sc.cfg.External == nil {
		if o := sc.s.eng.lookup(sc.cfg.Name); o != nil {
			localIdent = streamIdentity(o.created)
			sc.mu.Lock()
			if sc.origin == "" || sc.sseq == 0 {
				sc.origin = localIdent
			}
			sc.mu.Unlock()
		}
	}
	bus.Publish(sc.api+".CONSUMER.CREATE."+sc.cfg.Name+"."+name, inbox, nil, body)
	var rep reply
	select {
	case rep = <-resp:
	case <-time.After(sourceRequestTimeout):
		return jsapi.NewStreamCreateError(errors.New("consumer create for " + sc.cfg.Name + " timed out"))
	case <-sc.done:
		return jsapi.NewStreamCreateError(errSourceClosed)
	}
	var r jsapi.ConsumerCreateResponse
	if err := json.Unmarshal(rep.data, &r); err != nil {
		return jsapi.NewStreamCreateError(err)
	}
	if r.Error != nil {
		return r.Error
	}
	ident := string(rep.ident)
	if ident == "" {
		ident = localIdent
	}
	sc.last.Store(time.Now().UnixNano())
	sc.mu.Lock()
	sc.err = nil
	if !sc.mirror && ident != "" && sc.origin != "" && !sameIdentity(ident, sc.origin) && sc.sseq > 0 {
		// The origin was recreated: what is stored came from its
		// predecessor, so copy the new one from its start.
		sc.s.eng.log.Warn("jetstream: source origin recreated, copying from its start", "stream", sc.s.name, "origin", sc.cfg.Name)
		sc.sseq, sc.cname = 0, ""
		sc.origin = ident
		sc.mu.Unlock()
		sc.askRetry()
		return nil
	}
	sc.origin = ident
	sc.mu.Unlock()
	ok = true
	sc.drain(false)
	sc.mu.Lock()
	if r.ConsumerInfo != nil && sc.dseq == 0 {
		// Lag until the first delivery: what the origin holds past us.
		sc.lag = r.NumPending
	}
	sc.mu.Unlock()
	return nil
}

// randToken returns n random alphanumerics.
func randToken(n int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return string(b)
}

// askRetry wakes the run loop to recreate the consumer.
func (sc *sourcer) askRetry() {
	select {
	case sc.retry <- struct{}{}:
	default:
	}
}

// handleMsg receives the origin consumer's deliveries, heartbeats and
// flow-control requests.
func (sc *sourcer) handleMsg(subjB, reply, hdr, data []byte) {
	if code, _ := proto.ParseStatus(hdr); code == 100 && len(data) == 0 {
		sc.last.Store(time.Now().UnixNano())
		if len(reply) > 0 {
			// Flow-control request: answer off the delivering goroutine.
			r := string(reply)
			go sc.s.eng.bus.Publish(r, "", nil, nil)
			return
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderLastConsumer); len(v) > 0 {
			n, _ := strconv.ParseUint(string(v), 10, 64)
			sc.mu.Lock()
			gap := n != sc.dseq
			sc.mu.Unlock()
			if gap {
				sc.askRetry()
			}
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderConsumerStalled); len(v) > 0 {
			r := string(v)
			go sc.s.eng.bus.Publish(r, "", nil, nil)
		}
		return
	}
	sc.mu.Lock()
	if sc.awaiting {
		// Deliveries can overtake the create response, which carries the
		// origin's identity their headers need: hold them until it comes.
		sc.queue = append(sc.queue, queuedMsg{string(subjB), string(reply), bytesClone(hdr), bytesClone(data)})
		sc.mu.Unlock()
		return
	}
	sc.mu.Unlock()
	sc.deliver1(string(subjB), string(reply), hdr, data)
}

// queuedMsg is a delivery held while the create response is awaited.
type queuedMsg struct {
	subj, reply string
	hdr, data   []byte
}

// drain stores the deliveries held while the create response was
// awaited, then lets new ones through; with drop it discards them.
func (sc *sourcer) drain(drop bool) {
	for {
		sc.mu.Lock()
		q := sc.queue
		sc.queue = nil
		if len(q) == 0 || drop {
			sc.awaiting = false
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
		for _, m := range q {
			sc.deliver1(m.subj, m.reply, m.hdr, m.data)
		}
	}
}

// deliver1 stores one delivery of the current consumer in order.
func (sc *sourcer) deliver1(subj, reply string, hdr, data []byte) {
	cname, dc, sseq, dseq, pending, ok := parseAckReply(reply)
	if !ok || dc > 1 {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.stopped || cname != sc.cname {
		return
	}
	sc.last.Store(time.Now().UnixNano())
	switch {
	case dseq != sc.dseq+1:
		// A delivery was lost: start again after what is stored.
		sc.askRetry()
		return
	case sseq <= sc.sseq:
		sc.dseq = dseq // already stored (a resend after a recreate)
		return
	}
	var apiErr *jsapi.APIError
	if sc.mirror {
		apiErr = sc.storeMirrored(sseq, subj, hdr, data)
	} else {
		apiErr = sc.storeSourced(sseq, subj, hdr, data)
	}
	if apiErr != nil {
		sc.err = apiErr
		sc.s.eng.log.Warn("jetstream: store sourced message", "stream", sc.s.name, "origin", sc.cfg.Name, "seq", sseq, "err", apiErr)
		sc.askRetry()
		return
	}
	sc.dseq, sc.sseq = dseq, sseq
	if pending > 0 {
		pending--
	}
	sc.lag = pending
}

// parseAckReply reads the consumer name, delivery count, stream and
// consumer sequences and pending count from a v1 or v2 $JS.ACK subject.
func parseAckReply(r string) (cname string, dc, sseq, dseq, pending uint64, ok bool) {
	t := strings.Split(r, ".")
	off := 0
	switch {
	case len(t) == 9:
	case len(t) >= 11:
		off = 2
	default:
		return "", 0, 0, 0, 0, false
	}
	if t[0] != "$JS" || t[1] != "ACK" {
		return "", 0, 0, 0, 0, false
	}
	var err error
	num := func(i int) uint64 {
		n, e := strconv.ParseUint(t[i+off], 10, 64)
		if e != nil {
			err = e
		}
		return n
	}
	dc, sseq, dseq, pending = num(4), num(5), num(6), num(8)
	return t[3+off], dc, sseq, dseq, pending, err == nil
}

// stripSourceHeaders drops what must not travel with a copied message:
// an earlier Nats-Stream-Source, expectations and batch markers.
func stripSourceHeaders(hdr []byte) []byte {
	if len(hdr) == 0 {
		return nil
	}
	return proto.DeleteHeaders(bytesClone(hdr), func(name []byte) bool {
		return proto.HeaderNameIs(name, jsapi.HeaderStreamSource) ||
			proto.HeaderNameHasPrefix(name, "Nats-Expected-") || proto.HeaderNameHasPrefix(name, "Nats-Batch-")
	})
}

func bytesClone(b []byte) []byte { return append([]byte(nil), b...) }

// storeSourced stores a source's message with its Nats-Stream-Source
// header, transformed as configured. Caller holds sc.mu.
func (sc *sourcer) storeSourced(sseq uint64, subj string, hdr, data []byte) *jsapi.APIError {
	h := stripSourceHeaders(hdr)
	val := sc.ident + " " + strconv.FormatUint(sseq, 10) + " " + sc.filter + " " + sc.dest + " " + subj
	if sc.origin != "" {
		val += " " + sc.origin
	}
	h = proto.AppendHeader(nil, h, jsapi.HeaderStreamSource, val)
	for _, tr := range sc.trs {
		if out, ok := tr.apply(subj); ok {
			subj = out
			break
		}
	}
	s := sc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return jsapi.NewStreamCreateError(ErrClosed)
	}
	_, apiErr := s.storeLocked(subj, h, data)
	return apiErr
}

// storeMirrored stores a mirror's message at the origin's sequence,
// leaving deleted sequences between as gaps. Caller holds sc.mu.
func (sc *sourcer) storeMirrored(sseq uint64, subj string, hdr, data []byte) *jsapi.APIError {
	s := sc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return jsapi.NewStreamCreateError(ErrClosed)
	}
	st := s.store.State()
	if sseq <= st.LastSeq {
		return nil
	}
	if sseq > st.LastSeq+1 {
		if st.Msgs == 0 {
			if _, err := s.store.Purge(store.PurgeOptions{Sequence: sseq}); err != nil {
				return jsapi.StoreError(err)
			}
		} else {
			for seq := st.LastSeq + 1; seq < sseq; seq++ {
				n, _, err := s.store.Store("_mirror_gap_", nil, nil, 0)
				if err != nil {
					return jsapi.StoreError(err)
				}
				if _, err := s.store.Remove(n, false); err != nil {
					return jsapi.StoreError(err)
				}
			}
		}
		s.resyncConsumersLocked(true)
	}
	for _, tr := range sc.trs {
		if out, ok := tr.apply(subj); ok {
			subj = out
			break
		}
	}
	res, apiErr := s.storeMsgLocked(subj, stripSourceHeaders(hdr), data, true)
	if apiErr != nil {
		return apiErr
	}
	if res.seq != sseq {
		s.eng.log.Warn("jetstream: mirror sequence drift", "stream", s.name, "origin", sseq, "stored", res.seq)
	}
	return nil
}

// sourceInfos reports the mirror and sources for stream info.
func (s *stream) sourceInfos() (*jsapi.StreamSourceInfo, []*jsapi.StreamSourceInfo) {
	s.srcs.mu.Lock()
	list := append([]*sourcer(nil), s.srcs.list...)
	s.srcs.mu.Unlock()
	var mirror *jsapi.StreamSourceInfo
	var out []*jsapi.StreamSourceInfo
	for _, sc := range list {
		sc.mu.Lock()
		si := &jsapi.StreamSourceInfo{Name: sc.cfg.Name, Lag: sc.lag, Seq: sc.sseq, Error: sc.err, FilterSubject: sc.cfg.FilterSubject, Active: -1}
		sc.mu.Unlock()
		if l := sc.last.Load(); l != 0 {
			si.Active = time.Since(time.Unix(0, l))
		}
		if ext := sc.cfg.External; ext != nil {
			si.External = &jsapi.ExternalStream{APIPrefix: ext.APIPrefix, DeliverPrefix: ext.DeliverPrefix}
		}
		si.SubjectTransforms = append(si.SubjectTransforms, sc.cfg.SubjectTransforms...)
		if sc.mirror {
			si.Seq = 0 // nats-server reports seq for sources only
			mirror = si
		} else {
			out = append(out, si)
		}
	}
	return mirror, out
}

// srcTransform is one of a source's subject transforms: a filter and,
// unless the destination is empty, the compiled rewrite (jsapi's
// Transform, nats-server's mapping functions included).
type srcTransform struct {
	src string
	t   *jsapi.Transform
}

// newSrcTransform compiles a source transform; an empty dst keeps the
// subject (filter only).
func newSrcTransform(src, dst string) (*srcTransform, error) {
	if src == "" {
		src = ">"
	}
	t, err := jsapi.CompileTransform(src, dst)
	if err != nil {
		return nil, err
	}
	return &srcTransform{src: src, t: t}, nil
}

// apply returns the transformed subject when subj matches the filter.
func (t *srcTransform) apply(subj string) (string, bool) {
	if !subject.ValidLiteral(subj) {
		return "", false
	}
	if t.t == nil {
		return subj, subject.Match(t.src, subj)
	}
	b, ok := t.t.Append(nil, subj)
	return string(b), ok
}

// jsonSame reports whether a and b encode to the same JSON.
func jsonSame(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
