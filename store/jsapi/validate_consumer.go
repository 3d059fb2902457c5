package jsapi

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/subject"
)

// Normalize applies nats-server's consumer defaults and checks against the
// consumer's (normalized) stream, with no limits and without pedantic
// mode. See NormalizeWith.
func (c *ConsumerConfig) Normalize(stream *StreamConfig) *APIError {
	return c.NormalizeWith(stream, Options{})
}

// NormalizeWith applies nats-server's consumer defaults
// (setConsumerConfigDefaults) and checks (checkConsumerCfg, then the
// workqueue and name checks of consumer creation) against stream, the
// consumer's normalized stream configuration. On success c holds the
// configuration the server stores and echoes; on failure c is unchanged.
//
// Defaults: max_deliver -1; max_waiting 512 for pull; ack_wait 30s for
// ack explicit/all (backoff[0] when backoff is set); max_ack_pending from
// the stream's consumer_limits, else 1000 (capped by opts) when acks are
// used; inactive_threshold from consumer_limits, else 5s for ephemerals
// (no durable_name); priority_timeout 2m for pinned_client. Negative
// counts and durations become 0 (-1 for max_ack_pending) unless pedantic.
//
// Checks needing other consumers (workqueue partitions, max_consumers,
// existing consumers and actions) are the engine's; see
// CheckWorkQueueFilters and CheckConsumerUpdate.
func (c *ConsumerConfig) NormalizeWith(stream *StreamConfig, opts Options) *APIError {
	cfg := c.Clone()
	if err := cfg.setDefaults(stream, opts); err != nil {
		return err
	}
	if err := cfg.check(stream, opts); err != nil {
		return err
	}
	if err := cfg.checkCreation(stream); err != nil {
		return err
	}
	// Ephemerals always get an inactivity threshold.
	if cfg.Durable == "" && cfg.InactiveThreshold <= 0 {
		cfg.InactiveThreshold = DefaultInactiveThreshold
	}
	*c = *cfg
	return nil
}

// zeroIfNegative clears a negative value, refusing it in pedantic mode.
func zeroIfNegative[T ~int | ~int64](v *T, msg string, opts Options) *APIError {
	if *v < 0 {
		if opts.Pedantic {
			return NewPedanticError(errors.New(msg))
		}
		*v = 0
	}
	return nil
}

func (c *ConsumerConfig) setDefaults(stream *StreamConfig, opts Options) *APIError {
	if c.MaxDeliver == 0 || c.MaxDeliver < -1 {
		if opts.Pedantic && c.MaxDeliver < -1 {
			return pedantic("max_deliver must be set to -1")
		}
		c.MaxDeliver = -1
	}
	if err := zeroIfNegative(&c.MaxWaiting, "max_waiting must not be negative", opts); err != nil {
		return err
	}
	if c.MaxAckPending < -1 {
		if opts.Pedantic {
			return pedantic("max_ack_pending must be set to -1")
		}
		c.MaxAckPending = -1
	}
	if err := zeroIfNegative(&c.MaxRequestBatch, "max_batch must not be negative", opts); err != nil {
		return err
	}
	if err := zeroIfNegative(&c.MaxRequestExpires, "max_expires must not be negative", opts); err != nil {
		return err
	}
	if err := zeroIfNegative(&c.MaxRequestMaxBytes, "max_bytes must not be negative", opts); err != nil {
		return err
	}
	if err := zeroIfNegative(&c.Heartbeat, "idle_heartbeat must not be negative", opts); err != nil {
		return err
	}
	if err := zeroIfNegative(&c.InactiveThreshold, "inactive_threshold must not be negative", opts); err != nil {
		return err
	}
	if err := zeroIfNegative(&c.PinnedTTL, "priority_timeout must not be negative", opts); err != nil {
		return err
	}

	if c.DeliverSubject == "" && c.MaxWaiting == 0 {
		c.MaxWaiting = DefaultMaxWaiting
	}
	if c.AckWait == 0 && (c.AckPolicy == AckExplicit || c.AckPolicy == AckAll) {
		c.AckWait = DefaultAckWait
	}
	if len(c.BackOff) > 0 {
		if opts.Pedantic && c.AckWait != c.BackOff[0] {
			return pedantic("first backoff value has to equal batch AckWait")
		}
		c.AckWait = c.BackOff[0]
	}
	limits := stream.ConsumerLimits
	if c.MaxAckPending == 0 {
		if opts.Pedantic && limits.MaxAckPending > 0 {
			return pedantic("max_ack_pending must be set if it's configured in stream limits")
		}
		c.MaxAckPending = limits.MaxAckPending
	}
	if c.InactiveThreshold == 0 {
		if opts.Pedantic && limits.InactiveThreshold > 0 {
			return pedantic("inactive_threshold must be set if it's configured in stream limits")
		}
		c.InactiveThreshold = limits.InactiveThreshold
	}
	if c.MaxAckPending == 0 && c.AckPolicy != AckNone {
		c.MaxAckPending = DefaultMaxAckPending
		if opts.MaxAckPending > 0 && opts.MaxAckPending < c.MaxAckPending {
			c.MaxAckPending = opts.MaxAckPending
		}
	}
	if c.DeliverSubject == "" && c.MaxRequestBatch == 0 && opts.MaxRequestBatch > 0 {
		if opts.Pedantic {
			return pedantic("max_request_batch must be set if it's JetStream limits are set")
		}
		c.MaxRequestBatch = opts.MaxRequestBatch
	}
	if c.PriorityPolicy == PriorityPinnedClient && c.PinnedTTL == 0 {
		c.PinnedTTL = DefaultPinnedTTL
	}
	if c.AckPolicy == AckFlowControl && !opts.Pedantic {
		c.FlowControl = true
		c.Heartbeat = FlowControlAckHeartbeat
	}
	return nil
}

// validGroupName is nats-server's priority group name rule.
var validGroupName = regexp.MustCompile(`^[a-zA-Z0-9/_=-]{1,16}$`)

func (c *ConsumerConfig) check(stream *StreamConfig, opts Options) *APIError {
	if c.Name != "" && checkChars(c.Name) != nil {
		return invalidStream(`consumer name can not contain '.', '*', '>', '\', '/'`)
	}
	if c.Durable != "" && checkChars(c.Durable) != nil {
		return invalidStream(`consumer durable name can not contain '.', '*', '>', '\', '/'`)
	}
	if c.Replicas > 0 && c.Replicas > stream.Replicas {
		return NewConsumerReplicasExceedsStreamError()
	}
	if c.Replicas < 0 {
		return NewReplicasCountCannotBeNegativeError()
	}
	if stream.Retention != LimitsPolicy && c.Replicas != 0 && c.Replicas != stream.Replicas {
		return NewConsumerReplicasShouldMatchStreamError()
	}
	if _, err := c.AckPolicy.MarshalJSON(); err != nil {
		return NewConsumerAckPolicyInvalidError()
	}
	if _, err := c.ReplayPolicy.MarshalJSON(); err != nil {
		return NewConsumerReplayPolicyInvalidError()
	}
	for _, b := range c.BackOff {
		if b < 0 {
			return NewConsumerBackOffNegativeError()
		}
	}
	if c.AckWait < 0 {
		return NewConsumerAckWaitNegativeError()
	}
	if c.AckPolicy == AckFlowControl {
		switch {
		case c.DeliverSubject == "":
			return NewConsumerAckFCRequiresPushError()
		case !c.FlowControl:
			return NewConsumerAckFCRequiresFCError()
		case c.Heartbeat != FlowControlAckHeartbeat:
			return invalidStream("flow control ack policy heartbeat needs to be 1s")
		case c.MaxAckPending <= 0:
			return NewConsumerAckFCRequiresMaxAckPendingError()
		case c.AckWait != 0 || len(c.BackOff) > 0:
			return NewConsumerAckFCRequiresNoAckWaitError()
		case c.MaxDeliver > 0:
			return NewConsumerAckFCRequiresNoMaxDeliverError()
		}
	}
	if n := len(c.BackOff); n > 0 && c.MaxDeliver != -1 && n > c.MaxDeliver {
		return NewConsumerMaxDeliverBackoffError()
	}
	if len(c.Description) > MaxDescriptionLen {
		return NewConsumerDescriptionTooLongError(MaxDescriptionLen)
	}

	if c.DeliverSubject != "" {
		switch {
		case !subject.IsLiteral(c.DeliverSubject):
			return NewConsumerDeliverToWildcardsError()
		case !subjectOK(c.DeliverSubject):
			return NewConsumerInvalidDeliverSubjectError()
		case deliveryFormsCycle(stream, c.DeliverSubject):
			return NewConsumerDeliverCycleError()
		case c.MaxWaiting != 0:
			return NewConsumerPushMaxWaitingError()
		case c.MaxAckPending > 0 && c.AckPolicy == AckNone:
			return NewConsumerMaxPendingAckPolicyRequiredError()
		case c.Heartbeat > 0 && c.Heartbeat < minDuration:
			return NewConsumerSmallHeartbeatError()
		}
	} else {
		switch {
		case c.AckPolicy == AckNone && stream.Retention == WorkQueuePolicy:
			return NewConsumerPullRequiresAckError()
		case c.RateLimit > 0:
			return NewConsumerPullWithRateLimitError()
		case c.MaxWaiting < 0:
			return NewConsumerMaxWaitingNegativeError()
		case c.Heartbeat > 0:
			return NewConsumerHBRequiresPushError()
		case c.FlowControl:
			return NewConsumerFCRequiresPushError()
		case c.MaxRequestBatch < 0:
			return NewConsumerMaxRequestBatchNegativeError()
		case c.MaxRequestExpires != 0 && c.MaxRequestExpires < time.Millisecond:
			return NewConsumerMaxRequestExpiresTooSmallError()
		case opts.MaxRequestBatch > 0 && c.MaxRequestBatch > opts.MaxRequestBatch:
			return NewConsumerMaxRequestBatchExceededError(opts.MaxRequestBatch)
		}
	}
	if opts.MaxAckPending > 0 && c.MaxAckPending > opts.MaxAckPending {
		return NewConsumerMaxPendingAckExcessError(opts.MaxAckPending)
	}
	limits := stream.ConsumerLimits
	if limits.MaxAckPending > 0 && c.MaxAckPending > limits.MaxAckPending {
		return NewConsumerMaxPendingAckExcessError(limits.MaxAckPending)
	}
	if limits.InactiveThreshold > 0 && c.InactiveThreshold > limits.InactiveThreshold {
		return NewConsumerInactiveThresholdExcessError(limits.InactiveThreshold)
	}

	if c.Direct {
		if c.DeliverSubject == "" {
			return NewConsumerDirectRequiresPushError()
		}
		if c.Durable != "" {
			return NewConsumerDirectRequiresEphemeralError()
		}
	}
	if err := c.checkFilters(); err != nil {
		return err
	}
	if err := c.checkStart(); err != nil {
		return err
	}
	if c.SampleFrequency != "" {
		s := strings.TrimSuffix(c.SampleFrequency, "%")
		if n, err := strconv.Atoi(s); err != nil || n < 0 {
			if err == nil {
				err = errors.New("sampling must not be negative")
			}
			return NewConsumerInvalidSamplingError(err)
		}
	}
	if c.FlowControl && c.Heartbeat == 0 {
		return NewConsumerWithFlowControlNeedsHeartbeatsError()
	}
	if c.Durable != "" && c.Name != "" && c.Name != c.Durable {
		return NewConsumerCreateDurableAndNameMismatchError()
	}
	if metadataLen(c.Metadata) > MaxMetadataLen {
		return NewConsumerMetadataLengthError(fmt.Sprintf("%dKB", MaxMetadataLen/1024))
	}
	if c.PriorityPolicy != PriorityNone {
		if c.DeliverSubject != "" {
			return NewConsumerPushWithPriorityGroupError()
		}
		if len(c.PriorityGroups) == 0 {
			return NewConsumerPriorityPolicyWithoutGroupError()
		}
		for _, g := range c.PriorityGroups {
			if g == "" {
				return NewConsumerEmptyGroupNameError()
			}
			if !validGroupName.MatchString(g) {
				return NewConsumerInvalidGroupNameError()
			}
		}
	} else {
		if len(c.PriorityGroups) > 0 {
			return NewConsumerPriorityGroupWithPolicyNoneError()
		}
		if c.PinnedTTL > 0 {
			return NewConsumerPinnedTTLWithoutPriorityPolicyNoneError()
		}
	}
	if stream.Placement != nil && stream.Placement.Preferred != "" {
		return invalidStream("preferred server not permitted in placement")
	}
	return nil
}

// deliveryFormsCycle reports whether push deliveries to deliver would be
// captured by the stream itself.
func deliveryFormsCycle(stream *StreamConfig, deliver string) bool {
	for _, s := range stream.Subjects {
		if subjectOK(s) && subject.Subset(deliver, s) {
			return true
		}
	}
	return false
}

func (c *ConsumerConfig) checkFilters() *APIError {
	if c.FilterSubject != "" && len(c.FilterSubjects) > 0 {
		return NewConsumerDuplicateFilterSubjectsError()
	}
	if c.FilterSubject != "" && !subjectOK(c.FilterSubject) {
		return invalidStream("invalid subject")
	}
	for _, f := range c.FilterSubjects {
		if f == "" {
			return NewConsumerEmptyFilterError()
		}
	}
	filters := c.Filters()
	for i, f := range filters {
		if !subjectOK(f) {
			return invalidStream("invalid subject")
		}
		for j, g := range filters {
			if i != j && subjectOK(g) && subject.Subset(f, g) {
				return NewConsumerOverlappingSubjectFiltersError()
			}
		}
	}
	return nil
}

func (c *ConsumerConfig) checkStart() *APIError {
	badStart := func(dp, start string) *APIError {
		return NewConsumerInvalidPolicyError(fmt.Errorf(
			"consumer delivery policy is deliver %s, but optional start %s is also set", dp, start))
	}
	notSet := func(dp, what string) *APIError {
		return NewConsumerInvalidPolicyError(fmt.Errorf(
			"consumer delivery policy is deliver %s, but optional %s is not set", dp, what))
	}
	switch c.DeliverPolicy {
	case DeliverAll, DeliverLast, DeliverNew, DeliverLastPerSubject:
		name := map[DeliverPolicy]string{DeliverAll: "all", DeliverLast: "last",
			DeliverNew: "new", DeliverLastPerSubject: "last per subject"}[c.DeliverPolicy]
		if c.OptStartSeq > 0 {
			return badStart(name, "sequence")
		}
		if c.OptStartTime != nil {
			return badStart(name, "time")
		}
		if c.DeliverPolicy == DeliverLastPerSubject && len(c.Filters()) == 0 {
			return notSet(name, "filter subject")
		}
	case DeliverByStartSequence:
		if c.OptStartSeq == 0 {
			return notSet("by start sequence", "start sequence")
		}
		if c.OptStartTime != nil {
			return badStart("by start sequence", "time")
		}
	case DeliverByStartTime:
		if c.OptStartTime == nil {
			return notSet("by start time", "start time")
		}
		if c.OptStartSeq != 0 {
			return badStart("by start time", "start sequence")
		}
	}
	return nil
}

// checkCreation holds the checks nats-server makes while adding the
// consumer to its stream: workqueue rules and the final name rules.
func (c *ConsumerConfig) checkCreation(stream *StreamConfig) *APIError {
	if stream.Retention == WorkQueuePolicy {
		if c.AckPolicy != AckExplicit && c.AckPolicy != AckFlowControl {
			return NewConsumerWQRequiresExplicitAckError()
		}
		if c.DeliverPolicy != DeliverAll {
			return NewConsumerWQConsumerNotDeliverAllError()
		}
	}
	if c.Durable != "" && len(c.Durable) > MaxNameLen {
		return NewConsumerNameTooLongError(MaxNameLen)
	}
	if c.Name != "" && len(c.Name) > MaxNameLen {
		return NewConsumerNameTooLongError(MaxNameLen)
	}
	return nil
}

// CheckWorkQueueFilters applies nats-server's partition rule for a new
// consumer named name with the given filters on a workqueue stream.
// others maps every other consumer of the stream to its filters (nil or
// empty for an unfiltered one). With other consumers present, an
// unfiltered consumer is refused with 10099, and one whose filters overlap
// another consumer's (or any unfiltered consumer) with 10100. For updates
// of an existing consumer nats-server applies only the 10100 rule.
func CheckWorkQueueFilters(name string, filters []string, others map[string][]string) *APIError {
	n := 0
	for other := range others {
		if other != name {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if len(filters) == 0 {
		return NewConsumerWQMultipleUnfilteredError()
	}
	for other, ofs := range others {
		if other == name {
			continue
		}
		if len(ofs) == 0 {
			return NewConsumerWQConsumerNotUniqueError()
		}
		for _, f := range filters {
			for _, g := range ofs {
				if subjectOverlap(f, g) {
					return NewConsumerWQConsumerNotUniqueError()
				}
			}
		}
	}
	return nil
}

// CheckConsumerUpdate checks that next may replace prev, an existing
// consumer's configuration, as nats-server does for create-or-update and
// update actions (both normalized). Only mutable fields may differ: not
// deliver_policy, opt_start_seq/time, ack_policy, replay_policy,
// idle_heartbeat, flow_control, mem_storage, max_waiting, nor push versus
// pull. Changing deliver_subject while the old one has interest
// (deliverBound) is 10013. Other refusals are 500/10012 with nats-server's
// texts. For the "create" action the engine instead compares with
// SameConsumerConfig and answers 10148 on a difference.
func CheckConsumerUpdate(prev, next *ConsumerConfig, deliverBound bool) *APIError {
	if jsonEqual(prev, next) {
		return nil
	}
	fail := func(msg string) *APIError { return NewConsumerCreateError(errors.New(msg)) }
	switch {
	case prev.DeliverPolicy != next.DeliverPolicy:
		return fail("deliver policy can not be updated")
	case prev.MemoryStorage != next.MemoryStorage:
		return fail("storage type can not be updated")
	case prev.OptStartSeq != next.OptStartSeq:
		return fail("start sequence can not be updated")
	case !timeEqual(prev.OptStartTime, next.OptStartTime):
		return fail("start time can not be updated")
	case prev.AckPolicy != next.AckPolicy:
		return fail("ack policy can not be updated")
	case prev.ReplayPolicy != next.ReplayPolicy:
		return fail("replay policy can not be updated")
	case prev.Heartbeat != next.Heartbeat:
		return fail("heart beats can not be updated")
	case prev.FlowControl != next.FlowControl:
		return fail("flow control can not be updated")
	}
	if prev.DeliverSubject != next.DeliverSubject {
		switch {
		case prev.DeliverSubject == "":
			return fail("can not update pull consumer to push based")
		case next.DeliverSubject == "":
			return fail("can not update push consumer to pull based")
		case deliverBound:
			return NewConsumerNameExistError()
		}
	}
	if prev.MaxWaiting != next.MaxWaiting {
		return fail("max waiting can not be updated")
	}
	if n := len(next.BackOff); n > 0 && next.MaxDeliver != -1 && n > next.MaxDeliver {
		return NewConsumerMaxDeliverBackoffError()
	}
	return nil
}

// SameConsumerConfig reports whether a and b, both normalized, are the
// same configuration for the "create" action (a difference answers
// 10148). Server-owned metadata keys ("_nats.") and pause_until, which
// nats-server carries over from the existing consumer, are ignored.
func SameConsumerConfig(a, b *ConsumerConfig) bool {
	x, y := a.Clone(), b.Clone()
	x.Metadata, y.Metadata = withoutServerMetadata(x.Metadata), withoutServerMetadata(y.Metadata)
	x.PauseUntil, y.PauseUntil = nil, nil
	return jsonEqual(x, y)
}

// CheckSupported refuses consumer features leafbox does not implement:
// the flow_control ack policy (10181) and nats-server's sourcing
// consumers (10012). Direct consumers, which a nats-server hub creates to
// source or mirror one of our streams, are served as plain ephemeral push
// consumers: every leafbox consumer is local. Priority groups (overflow,
// pinned_client, prioritized) are served; Normalize checks them.
func (c *ConsumerConfig) CheckSupported() *APIError {
	if c.AckPolicy == AckFlowControl {
		return NewConsumerAckPolicyInvalidError()
	}
	if c.Sourcing {
		return NewConsumerCreateError(errors.New("sourcing consumers are not supported"))
	}
	return nil
}

func containsPathSeparator(s string) bool { return strings.ContainsAny(s, `\/`) }

// timeEqual compares optional times by instant.
func timeEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// PriorityGroupAllowed reports whether a pull request's priority group may
// be served by the consumer configured by c, with the 400 status text
// nats-server sends otherwise ("Bad Request - …"); the pin-ID comparison
// (423) is the engine's.
func (c *ConsumerConfig) PriorityGroupAllowed(pg *PriorityGroup) (ok bool, status string) {
	if (pg.MinPending != 0 || pg.MinAckPending != 0) && c.PriorityPolicy != PriorityOverflow {
		return false, "Bad Request - Not a Overflow Priority consumer"
	}
	if pg.ID != "" && c.PriorityPolicy != PriorityPinnedClient {
		return false, "Bad Request - Not a Pinned Client Priority consumer"
	}
	if pg.Priority < 0 || pg.Priority > 9 {
		return false, "Bad Request - Priority must be between 0 and 9"
	}
	if c.PriorityPolicy != PriorityNone {
		if pg.Group == "" {
			return false, "Bad Request - Priority Group missing"
		}
		if !slices.Contains(c.PriorityGroups, pg.Group) {
			return false, "Bad Request - Invalid Priority Group"
		}
	}
	return true, ""
}

// Check checks a CONSUMER.UNPIN request as nats-server does before it
// looks the consumer up: the group must be given (10025 "consumer group
// not specified") and be a valid group name (10162).
func (r *ConsumerUnpinRequest) Check() *APIError {
	switch {
	case r.Group == "":
		return NewInvalidJSONError(errors.New("consumer group not specified"))
	case !validGroupName.MatchString(r.Group):
		return NewConsumerInvalidGroupNameError()
	}
	return nil
}

// CheckUnpin checks an unpin of group against the consumer's
// configuration: it must be one of its priority groups (10160).
func (c *ConsumerConfig) CheckUnpin(group string) *APIError {
	if !slices.Contains(c.PriorityGroups, group) {
		return NewConsumerInvalidPriorityGroupError()
	}
	return nil
}
