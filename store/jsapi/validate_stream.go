package jsapi

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/subject"
)

// Normalize applies nats-server's defaults to a stream configuration and
// checks it, as STREAM.CREATE and STREAM.UPDATE do, with no limits and
// without pedantic mode. See NormalizeWith.
func (c *StreamConfig) Normalize() *APIError { return c.NormalizeWith(Options{}) }

// NormalizeWith applies nats-server's defaults to a stream configuration
// and checks it (nats-server's checkStreamCfg, then the single-server
// replica check). On success c holds the normalized configuration, the one
// the server stores and echoes; on failure c is unchanged and the error is
// the one nats-server would send, usually 500/10052 with its text.
//
// Defaults: storage file, num_replicas 1, max_msgs, max_bytes,
// max_msgs_per_subject, max_msg_size and max_consumers -1 when 0 or below
// -1, duplicate_window 2m (or max_age when smaller, or the server limit),
// subjects [name] for a stream that is neither mirror nor sourcing, an
// empty placement dropped, republish src ">" when empty, and for
// subject_delete_marker_ttl: allow_msg_ttl and allow_rollup_hdrs on.
//
// Checks needing other streams (subject overlap 10065, mirror and source
// existence, cycles, account usage) are the engine's.
func (c *StreamConfig) NormalizeWith(opts Options) *APIError {
	cfg := c.Clone()
	if err := cfg.normalize(opts); err != nil {
		return err
	}
	*c = *cfg
	return nil
}

func invalidStream(format string, args ...any) *APIError {
	return NewStreamInvalidConfigError(fmt.Errorf(format, args...))
}

func pedantic(format string, args ...any) *APIError {
	return NewPedanticError(fmt.Errorf(format, args...))
}

// unlimitedInt64 maps 0 and values below -1 to -1, refusing values below
// -1 in pedantic mode.
func unlimitedInt64(v *int64, field string, opts Options) *APIError {
	if *v == 0 || *v < -1 {
		if opts.Pedantic && *v < -1 {
			return pedantic("%s must be set to -1", field)
		}
		*v = -1
	}
	return nil
}

func (c *StreamConfig) normalize(opts Options) *APIError {
	if checkChars(c.Name) != nil {
		return invalidStream(`stream name is required and can not contain '.', '*', '>', '\', '/'`)
	}
	if len(c.Name) > MaxNameLen {
		return invalidStream("stream name is too long, maximum allowed is %d", MaxNameLen)
	}
	if len(c.Description) > MaxDescriptionLen {
		return invalidStream("stream description is too long, maximum allowed is %d", MaxDescriptionLen)
	}
	if metadataLen(c.Metadata) > MaxMetadataLen {
		return invalidStream("stream metadata exceeds maximum size of %d bytes", MaxMetadataLen)
	}
	if _, err := c.Retention.MarshalJSON(); err != nil {
		return invalidStream("invalid retention")
	}
	if _, err := c.Discard.MarshalJSON(); err != nil {
		return invalidStream("invalid discard policy")
	}
	if _, err := c.Compression.MarshalJSON(); err != nil {
		return invalidStream("invalid compression")
	}
	if _, err := c.Storage.MarshalJSON(); err != nil {
		return invalidStream("invalid storage type")
	}

	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Replicas > MaxReplicas {
		return invalidStream("maximum replicas is %d", MaxReplicas)
	}
	if c.Replicas < 0 {
		return NewReplicasCountCannotBeNegativeError()
	}
	if err := unlimitedInt64(&c.MaxMsgs, "max_msgs", opts); err != nil {
		return err
	}
	if err := unlimitedInt64(&c.MaxMsgsPerSubject, "max_msgs_per_subject", opts); err != nil {
		return err
	}
	if err := unlimitedInt64(&c.MaxBytes, "max_bytes", opts); err != nil {
		return err
	}
	size := int64(c.MaxMsgSize)
	if err := unlimitedInt64(&size, "max_msg_size", opts); err != nil {
		return err
	}
	c.MaxMsgSize = int32(size)
	consumers := int64(c.MaxConsumers)
	if err := unlimitedInt64(&consumers, "max_consumers", opts); err != nil {
		return err
	}
	c.MaxConsumers = int(consumers)

	if c.MaxAge < 0 {
		return invalidStream("max age can not be negative")
	}
	if c.MaxAge != 0 && c.MaxAge < minDuration {
		return invalidStream("max age needs to be >= 100ms")
	}
	if err := c.normalizeDuplicates(opts); err != nil {
		return err
	}

	if c.DenyPurge && c.AllowRollup {
		return invalidStream("roll-ups require the purge permission")
	}
	if c.AllowMsgCounter {
		switch {
		case c.Discard == DiscardNew:
			return invalidStream("counter stream cannot use discard new")
		case c.AllowMsgTTL:
			return invalidStream("counter stream cannot use message TTLs")
		case c.AllowMsgSchedules:
			return invalidStream("counter stream cannot use message schedules")
		case c.Retention != LimitsPolicy:
			return invalidStream("counter stream can only use limits retention")
		}
	}
	if c.DiscardNewPerSubject {
		if c.Discard != DiscardNew {
			return invalidStream("discard new per subject requires discard new policy to be set")
		}
		if c.MaxMsgsPerSubject <= 0 {
			return invalidStream("discard new per subject requires max msgs per subject > 0")
		}
	}
	if c.SubjectDeleteMarkerTTL > 0 {
		if c.SubjectDeleteMarkerTTL < time.Second {
			return invalidStream("subject delete marker TTL must be at least 1 second")
		}
		if !c.AllowMsgTTL {
			if opts.Pedantic {
				return invalidStream("subject delete marker cannot be set if message TTLs are disabled")
			}
			c.AllowMsgTTL = true
		}
		if !c.AllowRollup {
			if opts.Pedantic {
				return invalidStream("subject delete marker cannot be set if roll-ups are disabled")
			}
			c.AllowRollup, c.DenyPurge = true, false
		}
	} else if c.SubjectDeleteMarkerTTL < 0 {
		return invalidStream("subject delete marker TTL must not be negative")
	}
	if c.AllowMsgSchedules {
		if c.Discard == DiscardNew {
			return invalidStream("message scheduling cannot use discard new")
		}
		if !c.AllowRollup {
			if opts.Pedantic {
				return invalidStream("message scheduling cannot be set if roll-ups are disabled")
			}
			c.AllowRollup, c.DenyPurge = true, false
		}
	}
	if c.PersistMode == AsyncPersist {
		switch {
		case c.Storage != FileStorage:
			return invalidStream("async persist mode is only supported on file storage")
		case c.Replicas > 1:
			return invalidStream("async persist mode is not supported on replicated streams")
		case c.AllowAtomicPublish:
			return invalidStream("async persist mode is not supported with atomic batch publish")
		}
	}

	if err := c.checkMirror(); err != nil {
		return err
	}
	if err := c.checkSources(); err != nil {
		return err
	}
	if err := c.normalizeSubjects(); err != nil {
		return err
	}

	if opts.MaxBytesRequired && c.MaxBytes <= 0 {
		return NewStreamMaxBytesRequiredError()
	}
	limit := opts.StoreMaxStreamBytes
	if c.Storage == MemoryStorage {
		limit = opts.MemoryMaxStreamBytes
	}
	if limit > 0 && c.MaxBytes > limit {
		return NewStreamMaxStreamBytesExceededError()
	}

	if t := c.SubjectTransform; t != nil {
		if t.Source != "" && !subjectOK(t.Source) {
			return NewStreamTransformInvalidSourceError(invalidSubject(t.Source))
		}
		if err := validateMapping(t.Source, t.Destination); err != nil {
			return NewStreamTransformInvalidDestinationError(err)
		}
	}
	if err := c.normalizeRePublish(opts); err != nil {
		return err
	}

	if p := c.Placement; p != nil && p.Cluster == "" && len(p.Tags) == 0 && p.Preferred == "" {
		c.Placement = nil
	}
	if c.Placement != nil && c.Placement.Preferred != "" {
		return invalidStream("preferred server not permitted in placement")
	}

	// A single server cannot replicate (nats-server checks this right
	// after checkStreamCfg, in addStream and in the update check).
	if c.Replicas > 1 {
		return NewReplicasNotSupportedError()
	}
	return nil
}

func (c *StreamConfig) normalizeDuplicates(opts Options) *APIError {
	if c.DuplicateWindow == 0 && c.Mirror == nil && len(c.Sources) == 0 {
		window := DefaultDuplicateWindow
		if opts.MaxDuplicateWindow > 0 && window > opts.MaxDuplicateWindow {
			if opts.Pedantic {
				return pedantic("duplicate window limits are higher than current limits")
			}
			window = opts.MaxDuplicateWindow
		}
		if c.MaxAge != 0 && c.MaxAge < window {
			if opts.Pedantic {
				return pedantic("duplicate window cannot be bigger than max age")
			}
			window = c.MaxAge
		}
		c.DuplicateWindow = window
	}
	switch {
	case c.DuplicateWindow < 0:
		return invalidStream("duplicates window can not be negative")
	case c.MaxAge != 0 && c.DuplicateWindow > c.MaxAge:
		return invalidStream("duplicates window can not be larger then max age")
	case opts.MaxDuplicateWindow > 0 && c.DuplicateWindow > opts.MaxDuplicateWindow:
		return invalidStream("duplicates window can not be larger then server limit of %v", opts.MaxDuplicateWindow)
	case c.DuplicateWindow > 0 && c.DuplicateWindow < minDuration:
		return invalidStream("duplicates window needs to be >= 100ms")
	}
	return nil
}

// checkMirrorTransforms checks a mirror's subject transforms in
// nats-server's order: per transform its source, its destination, then
// its overlap with the others.
func checkMirrorTransforms(trs []SubjectTransformConfig) *APIError {
	for i, tr := range trs {
		if tr.Source != "" && !subjectOK(tr.Source) {
			return NewMirrorInvalidSubjectFilterError(invalidSubject(tr.Source))
		}
		if err := validateMapping(tr.Source, tr.Destination); err != nil {
			return NewMirrorInvalidTransformDestinationError(err)
		}
		for j, other := range trs {
			if i != j && subjectOverlap(tr.Source, other.Source) {
				return NewMirrorOverlappingSubjectFiltersError()
			}
		}
	}
	return nil
}

func (c *StreamConfig) checkMirror() *APIError {
	m := c.Mirror
	if m == nil {
		return nil
	}
	switch {
	case c.FirstSeq > 0:
		return NewMirrorWithFirstSeqError()
	case len(c.Subjects) > 0:
		return NewMirrorWithSubjectsError()
	case len(c.Sources) > 0:
		return NewMirrorWithSourcesError()
	case c.AllowMsgCounter:
		return NewMirrorWithCountersError()
	case c.AllowAtomicPublish:
		return NewMirrorWithAtomicPublishError()
	case c.AllowBatchPublish:
		return NewMirrorWithBatchPublishError()
	case c.AllowMsgSchedules:
		return NewMirrorWithMsgSchedulesError()
	}
	if cs := m.Consumer; cs != nil {
		if !ValidName(cs.Name) || !subject.ValidLiteral(cs.DeliverSubject) ||
			m.OptStartSeq != 0 || m.OptStartTime != nil || m.FilterSubject != "" {
			return NewMirrorDurableConsumerCfgInvalidError()
		}
	}
	if m.FilterSubject != "" && len(m.SubjectTransforms) != 0 {
		return NewMirrorMultipleFiltersNotAllowedError()
	}
	if c.SubjectDeleteMarkerTTL > 0 {
		return invalidStream("subject delete markers forbidden on mirrors")
	}
	if err := checkMirrorTransforms(m.SubjectTransforms); err != nil {
		return err
	}
	if m.External == nil {
		if !ValidName(m.Name) {
			return NewMirrorInvalidStreamNameError()
		}
		return nil
	}
	return checkExternal(m.External)
}

// subjectOverlap is nats-server's SubjectsCollide; an empty filter
// collides with nothing but itself.
func subjectOverlap(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	return subject.Overlap(a, b)
}

func checkExternal(ext *ExternalStream) *APIError {
	if p := ext.DeliverPrefix; p != "" && !subject.ValidLiteral(p) {
		return NewStreamInvalidExternalDeliverySubjError(p)
	}
	if p := ext.APIPrefix; p != "" {
		if !subject.ValidLiteral(p) {
			return invalidStream("stream external api prefix %q must be a valid subject without wildcards", p)
		}
		if subjectOverlap(p, APIPrefix) {
			return NewStreamExternalAPIOverlapError(p, APIPrefix)
		}
	}
	return nil
}

// orAll maps an empty filter to ">", its meaning.
func orAll(v string) string {
	if v == "" {
		return ">"
	}
	return v
}

// sourceKey identifies a source for duplicate detection, after
// nats-server's composeIName: the name, the external API prefix, the
// consumer, and the filter/transform pairs with empty parts as ">".
func sourceKey(s *StreamSource) string {
	key := s.Name
	if s.External != nil {
		key += ":" + s.External.APIPrefix
	}
	if s.Consumer != nil {
		key += ":C=" + s.Consumer.Name
	}
	if len(s.SubjectTransforms) == 0 {
		return key + " " + orAll(s.FilterSubject) + " >"
	}
	for _, tr := range s.SubjectTransforms {
		key += " " + orAll(tr.Source) + " " + orAll(tr.Destination)
	}
	return key
}

func (c *StreamConfig) checkSources() *APIError {
	if len(c.Sources) > 0 && c.AllowMsgSchedules {
		return NewSourceWithMsgSchedulesError()
	}
	keys := make(map[string]bool, len(c.Sources))
	consumers := make(map[string]bool)
	for _, s := range c.Sources {
		if s == nil || !ValidName(s.Name) {
			return NewSourceInvalidStreamNameError()
		}
		k := sourceKey(s)
		if keys[k] {
			return NewSourceDuplicateDetectedError()
		}
		keys[k] = true
		if s.FilterSubject != "" && len(s.SubjectTransforms) != 0 {
			return NewSourceMultipleFiltersNotAllowedError()
		}
		for _, tr := range s.SubjectTransforms {
			if tr.Source != "" && !subjectOK(tr.Source) {
				return NewSourceInvalidSubjectFilterError(invalidSubject(tr.Source))
			}
			if err := validateMapping(tr.Source, tr.Destination); err != nil {
				return NewSourceInvalidTransformDestinationError(err)
			}
		}
		// Sources refuse transforms where one source contains another
		// (nats-server's subset test, not general overlap).
		for i, a := range s.SubjectTransforms {
			for j, b := range s.SubjectTransforms {
				if i != j && subject.Subset(a.Source, b.Source) {
					return NewSourceOverlappingSubjectFiltersError()
				}
			}
		}
		if cs := s.Consumer; cs != nil {
			if !ValidName(cs.Name) || !subject.ValidLiteral(cs.DeliverSubject) ||
				s.OptStartSeq != 0 || s.OptStartTime != nil || s.FilterSubject != "" {
				return NewSourceDurableConsumerCfgInvalidError()
			}
			ck := s.Name
			if s.External != nil {
				ck += ":" + s.External.APIPrefix
			}
			ck += " " + cs.Name
			if consumers[ck] {
				return NewSourceDurableConsumerDuplicateDetectedError()
			}
			consumers[ck] = true
		}
		if s.External != nil {
			if err := checkExternal(s.External); err != nil {
				return err
			}
		}
	}
	return nil
}

// reservedNamespaces are subject spaces a stream may capture only with
// no_ack, so that it cannot swallow API requests and their acks.
var reservedNamespaces = []string{"$JS.>", "$JSC.>", "$NRG.>"}

func (c *StreamConfig) normalizeSubjects() *APIError {
	if len(c.Subjects) == 0 {
		if c.Mirror == nil && len(c.Sources) == 0 {
			c.Subjects = []string{c.Name}
		}
		return nil
	}
	// Mirrors with subjects were refused by checkMirror.
	seen := make(map[string]bool, len(c.Subjects))
	for i, s := range c.Subjects {
		if !subjectOK(s) {
			return invalidStream("invalid subject")
		}
		if seen[s] {
			return invalidStream("duplicate subjects detected")
		}
		if s == ">" {
			if !c.NoAck {
				return invalidStream("capturing all subjects requires no-ack to be true")
			}
			if c.Replicas != 1 {
				return invalidStream("capturing all subjects requires replicas of 1")
			}
		}
		if !c.NoAck {
			for _, ns := range reservedNamespaces {
				if subject.Overlap(s, ns) && !subject.Subset(s, "$JS.EVENT.>") {
					return invalidStream("subjects that overlap with jetstream api require no-ack to be true")
				}
			}
			if subject.Overlap(s, "$SYS.>") && !subject.Subset(s, "$SYS.ACCOUNT.>") {
				return invalidStream("subjects that overlap with system api require no-ack to be true")
			}
		}
		for _, other := range c.Subjects[i+1:] {
			if subjectOK(other) && subject.Overlap(other, s) {
				return invalidStream("subject %s overlaps with %s", strconv.Quote(s), strconv.Quote(other))
			}
		}
		seen[s] = true
	}
	return nil
}

func (c *StreamConfig) normalizeRePublish(opts Options) *APIError {
	rp := c.RePublish
	if rp == nil {
		return nil
	}
	if rp.Source == "" {
		if opts.Pedantic {
			return pedantic("republish source can not be empty")
		}
		rp.Source = ">"
	}
	if rp.Destination == ">" && rp.Source == ">" && c.SubjectTransform != nil &&
		len(c.Subjects) == 1 && c.SubjectTransform.Source == c.Subjects[0] {
		if opts.Pedantic {
			return pedantic("implicit republish based on subject transform")
		}
		rp.Source, rp.Destination = c.SubjectTransform.Destination, c.SubjectTransform.Destination
	}
	for _, s := range c.Subjects {
		if subjectOK(rp.Destination) && subject.Overlap(rp.Destination, s) {
			return invalidStream("stream configuration for republish destination forms a cycle")
		}
	}
	if checkTransform(rp.Source, rp.Destination) != nil {
		return invalidStream("stream configuration for republish with transform from '%s' to '%s' not valid", rp.Source, rp.Destination)
	}
	return nil
}

// CheckStreamUpdate checks that next, a normalized configuration, may
// replace prev, the stream's current one, as nats-server's update check
// does. It may adjust next: a sealed stream gets max_age 0, discard new,
// deny_delete, deny_purge and no roll-ups. Errors are 500/10052 with
// nats-server's texts, or 10055 for a changed mirror. Server metadata
// ("_nats." keys) is not compared.
func CheckStreamUpdate(prev, next *StreamConfig) *APIError {
	switch {
	case next.Name != prev.Name:
		return invalidStream("stream configuration name must match original")
	case next.Replicas > 1:
		return NewReplicasNotSupportedError()
	case next.Storage != prev.Storage:
		return invalidStream("stream configuration update can not change storage type")
	case next.Retention != prev.Retention &&
		(prev.Retention == WorkQueuePolicy || next.Retention == WorkQueuePolicy):
		return invalidStream("stream configuration update can not change retention policy to/from workqueue")
	case prev.Sealed && !next.Sealed:
		return invalidStream("stream configuration update can not unseal a sealed stream")
	case prev.DenyDelete && !next.DenyDelete:
		return invalidStream("stream configuration update can not cancel deny message deletes")
	case prev.DenyPurge && !next.DenyPurge:
		return invalidStream("stream configuration update can not cancel deny purge")
	case next.Mirror != nil && !mirrorEqual(prev.Mirror, next.Mirror):
		return NewStreamMirrorNotUpdatableError()
	case prev.AllowMsgTTL && !next.AllowMsgTTL:
		return invalidStream("message TTL status can not be disabled")
	case prev.AllowMsgCounter != next.AllowMsgCounter:
		return invalidStream("stream configuration update can not change message counter setting")
	case prev.AllowMsgSchedules && !next.AllowMsgSchedules:
		return invalidStream("message schedules can not be disabled")
	case prev.PersistMode != next.PersistMode:
		return invalidStream("stream configuration update can not change persist mode")
	}
	if next.Sealed {
		next.MaxAge = 0
		next.Discard = DiscardNew
		next.DenyDelete, next.DenyPurge = true, true
		next.AllowRollup = false
	}
	return nil
}

func mirrorEqual(a, b *StreamSource) bool {
	if a == nil || b == nil {
		return a == b
	}
	return jsonEqual(a, b)
}

// CheckStreamCreate applies the checks nats-server makes on STREAM.CREATE
// before normalizing: the name in the subject (subjectName) must equal the
// config's (10056) and contain no path separators (10128); a new stream
// cannot be sealed, nor set mirror_direct without a mirror (10052).
func CheckStreamCreate(subjectName string, cfg *StreamConfig) *APIError {
	switch {
	case subjectName != cfg.Name:
		return NewStreamMismatchError()
	case containsPathSeparator(subjectName):
		return NewStreamNameContainsPathSeparatorsError()
	case cfg.Sealed:
		return invalidStream("stream configuration for create can not be sealed")
	case cfg.MirrorDirect && cfg.Mirror == nil:
		return invalidStream("stream has no mirror but does have mirror direct")
	}
	return nil
}

// CheckSupported refuses stream features that leafbox does not implement
// but nats-server does, so that clients get an error instead of a stream
// that silently ignores them: fast batch publish (allow_batched). Counters,
// atomic batch publish, message schedules and persist_mode are
// implemented. The errors are 500/10052.
func (c *StreamConfig) CheckSupported() *APIError {
	for _, f := range []struct {
		set  bool
		name string
	}{
		{c.AllowBatchPublish, "allow_batched"},
	} {
		if f.set {
			return NewStreamInvalidConfigError(errors.New(f.name + " is not supported"))
		}
	}
	return nil
}

// SameStreamConfig reports whether a and b, both normalized, are the same
// configuration for the idempotent-create check (a different one answers
// 10058). Server-owned metadata keys ("_nats.") are ignored.
func SameStreamConfig(a, b *StreamConfig) bool {
	x, y := a.Clone(), b.Clone()
	x.Metadata, y.Metadata = withoutServerMetadata(x.Metadata), withoutServerMetadata(y.Metadata)
	return jsonEqual(x, y)
}
