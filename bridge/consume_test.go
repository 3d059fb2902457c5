package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/bridgetest"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
)

func publishN(t *testing.T, bus bridge.Bus, subj string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		_, _, err := bridge.Store(t.Context(), bus, subj, nil, fmt.Appendf(nil, "m%d", i))
		require.NoError(t, err, "store ", i)
	}
}

func next(t *testing.T, c *bridge.Consumer) *bridge.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bridgetest.Timeout)
	defer cancel()
	d, err := c.Next(ctx)
	require.NoError(t, err, "next")
	return d
}

// TestConsumerInOrder: a durable consumer on a real engine delivers the
// stream in order, acks move its position, a nak'ed message comes again
// before later ones, and the position survives a new Consumer.
func TestConsumerInOrder(t *testing.T) {
	b := bridgetest.NewBroker(t)
	b.AddStream(t, jsapi.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}})
	bus, closeBus, err := b.Connect("")
	require.NoError(t, err, "connect")
	defer closeBus()
	publishN(t, bus, "out.dev", 1, 5)

	cfg := bridge.ConsumerConfig{Stream: "OUT", Durable: "dev", FilterSubjects: []string{"out.dev"}}
	c, err := bridge.Consume(t.Context(), bus, cfg)
	require.NoError(t, err, "consume")
	for i := 1; i <= 3; i++ {
		d := next(t, c)
		require.Equal(t, string(d.Data), fmt.Sprint("m", i), "payload")
		require.Equal(t, string(d.Subject), "out.dev", "subject")
		require.Equal(t, d.Stream, "OUT", "stream")
		require.Equal(t, d.Sequence, uint64(i), "sequence")
		require.Equal(t, d.NumDelivered, uint64(1), "deliveries")
		require.Equal(t, d.NumPending, uint64(5-i), "pending")
		if i == 3 {
			require.NoError(t, d.Nak(0), "nak")
			continue
		}
		require.NoError(t, d.Ack(), "ack")
	}
	d := next(t, c)
	require.Equal(t, d.Sequence, uint64(3), "the nak'ed message comes first")
	require.Equal(t, d.NumDelivered, uint64(2), "its deliveries")
	require.NoError(t, d.AckSync(t.Context()), "ack sync")
	require.NoError(t, d.AckSync(t.Context()), "a second ack does nothing")
	require.Equal(t, b.ConsumerInfo(t, "OUT", "dev").AckFloor.Stream, uint64(3), "ack floor")

	// Delivered, not acked, then the consumer closes: it comes again at
	// once to the next one.
	d = next(t, c)
	require.Equal(t, d.Sequence, uint64(4), "sequence")
	c.Close()
	c.Close()
	require.NoError(t, d.Ack(), "ack after close (already nak'ed) does nothing")

	c, err = bridge.Consume(t.Context(), bus, cfg)
	require.NoError(t, err, "consume again")
	defer c.Close()
	d = next(t, c)
	require.Equal(t, d.Sequence, uint64(4), "redelivered after Close")
	require.NoError(t, d.Ack(), "ack")

	d = next(t, c)
	require.Equal(t, d.Sequence, uint64(5), "sequence")
	require.NoError(t, d.Term(), "term")

	// A message stored while Next waits arrives.
	got := make(chan *bridge.Delivery, 1)
	go func() {
		d, err := c.Next(t.Context())
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	publishN(t, bus, "out.dev", 6, 6)
	d = <-got
	require.Equal(t, string(d.Data), "m6", "message stored while waiting")
	require.NoError(t, d.Ack(), "ack")
}

// TestConsumerExpiry: pulls that expire are sent again, so a message
// stored long after arrives.
func TestConsumerExpiry(t *testing.T) {
	b := bridgetest.NewBroker(t)
	b.AddStream(t, jsapi.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}})
	bus, closeBus, _ := b.Connect("")
	defer closeBus()
	c, err := bridge.Consume(t.Context(), bus, bridge.ConsumerConfig{Stream: "OUT", Durable: "x", PullExpires: 20 * time.Millisecond})
	require.NoError(t, err, "consume")
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, err = c.Next(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "next on an empty stream")
	// Several pulls expired meanwhile.
	require.Equal(t, b.ConsumerInfo(t, "OUT", "x").NumWaiting <= 1, true, "waiting pulls")
	publishN(t, bus, "out.a", 1, 1)
	d := next(t, c)
	require.Equal(t, string(d.Data), "m1", "payload")
}

// TestConsumerErrors: a missing stream, bad names and a deleted consumer
// are errors a bridge can return from Run.
func TestConsumerErrors(t *testing.T) {
	b := bridgetest.NewBroker(t)
	bus, closeBus, _ := b.Connect("")
	defer closeBus()
	_, err := bridge.Consume(t.Context(), bus, bridge.ConsumerConfig{Stream: "NOPE", Durable: "x"})
	var apiErr *jsapi.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrCode != jsapi.NewStreamNotFoundError().ErrCode {
		t.Fatalf("consume on a missing stream: %v, want stream not found", err)
	}
	_, err = bridge.Consume(t.Context(), bus, bridge.ConsumerConfig{Stream: "a.b", Durable: "x"})
	if err == nil {
		t.Fatal("consume with an invalid stream name: no error")
	}

	b.AddStream(t, jsapi.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}})
	c, err := bridge.Consume(t.Context(), bus, bridge.ConsumerConfig{Stream: "OUT", Durable: "x"})
	require.NoError(t, err, "consume")
	defer c.Close()
	var del jsapi.ConsumerDeleteResponse
	reply, err := bus.Request(t.Context(), "$JS.API.CONSUMER.DELETE.OUT.x", nil, nil)
	require.NoError(t, err, "delete")
	_, err = jsapi.DecodeReply(reply.Data, &del)
	require.NoError(t, err, "delete answer")
	require.Equal(t, del.Success, true, "deleted")
	_, err = c.Next(t.Context())
	require.ErrorIs(t, err, bridge.ErrConsumerDeleted, "next after the consumer was deleted")
}
