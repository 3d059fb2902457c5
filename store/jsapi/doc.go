// Package jsapi is leafbox's JetStream wire layer: the JSON types of the
// $JS.API.* request and response bodies, the PubAck, the API error table
// with nats-server's err_code numbers, and the defaulting and validation
// that nats-server applies to stream and consumer configurations.
//
// It holds no engine and no state and imports only the standard library,
// store and core/subject. store/jetstream decodes requests into these
// types, validates them here, runs the engine, and encodes the responses.
// Field names, omitempty choices, enum strings, response type strings,
// defaults, err_codes and error texts follow nats-server v2.15.2; the tests
// replay requests recorded against a real nats-server (testdata/) and
// require the same JSON and the same errors.
//
// # Files
//
//	types.go      enums (retention, storage, discard, policies, action)
//	stream.go     StreamConfig, StreamInfo, StreamState, sources, StoredMsg
//	consumer.go   ConsumerConfig, ConsumerInfo, NextRequest
//	api.go        subjects, response type strings, request/response bodies
//	pub.go        PubAck, header names, status texts
//	counter.go    counter stream headers, CounterValue, ParseIncr
//	schedule.go   message schedule headers, ParseSchedule (@at, @every,
//	              cron), ScheduleLocation
//	request.go    DecodeRequest, IsEmptyRequest, CheckConsumerCreate,
//	              ParseNextRequest, ParseTTL
//	validate*.go  Normalize, update/create checks, StoreConfig, StoreError
//	transform.go  subject-transform destination checks
//	advisory.go   $JS.EVENT.ADVISORY subjects, type strings and bodies
//	errors.json   the wire error table; errors_generated.go is built from it
//
// # Handling a create request
//
// For STREAM.CREATE.<name>: DecodeRequest into a StreamCreateRequest
// (10025), CheckStreamCreate (10056, 10128, sealed), CheckSupported,
// NormalizeWith(Options{Pedantic: req.Pedantic}), then against existing
// streams: SameStreamConfig (else 10058) and subject overlap (10065).
// STREAM.UPDATE: the same without CheckStreamCreate (compare the names for
// 10056 yourself), then CheckStreamUpdate(old, new).
//
// For consumer creates: DecodeRequest into a ConsumerCreateRequest,
// CheckConsumerCreate (subject forms, names, filters, replicas), the
// stream lookup (10059), ConsumerConfig.NormalizeWith(stream, opts), then
// the action against an existing consumer: SameConsumerConfig for
// "create" (10148), 10149 for "update" of a missing one,
// CheckConsumerUpdate otherwise, and CheckWorkQueueFilters for new
// consumers of workqueue streams.
//
// # Errors
//
// Wire errors are *APIError values built by the generated constructors in
// errors_generated.go. Each carries the HTTP-like code, the stable err_code
// clients branch on, and the description with its placeholders filled;
// errors.Is(err, ErrStreamNotFound) compares err_codes.
//
// # Conventions
//
// Durations are time.Duration and travel as integer nanoseconds. Times are
// time.Time and travel as RFC 3339 with nanoseconds. Enums are small
// integer types whose zero value is nats-server's default and which
// marshal to nats-server's strings; unknown strings fail to unmarshal with
// nats-server's error text. leafbox does not stamp nats-server's "_nats.*"
// metadata keys; comparisons ignore them.
package jsapi
