package node

import (
	"testing"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/require"
)

func TestDownlinkHeaderEdits(t *testing.T) {
	hdr := []byte("NATS/1.0\r\nNats-Expected-Stream: CMDS\r\nX-Op: open\r\nnats-expected-last-sequence: 4\r\n\r\n")
	require.DeepEqual(t, string(withoutExpectations(hdr)), "NATS/1.0\r\nX-Op: open\r\n\r\n")
	require.DeepEqual(t, withoutExpectations([]byte("NATS/1.0\r\nNats-Expected-Stream: CMDS\r\n\r\n")), []byte(nil))
	require.DeepEqual(t, string(withoutExpectations([]byte("NATS/1.0\r\nA: b\r\n\r\n"))), "NATS/1.0\r\nA: b\r\n\r\n")
	require.DeepEqual(t, string(proto.AppendHeader(nil, nil, "Nats-Msg-Id", "x")), "NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n")
	require.DeepEqual(t, string(proto.AppendHeader(nil, []byte("NATS/1.0\r\nA: b\r\n\r\n"), "Nats-Msg-Id", "x")), "NATS/1.0\r\nA: b\r\nNats-Msg-Id: x\r\n\r\n")
	if !proto.HasHeaderFold([]byte("NATS/1.0\r\nnats-msg-id: 1\r\n\r\n"), "Nats-Msg-Id") || proto.HasHeaderFold(nil, "Nats-Msg-Id") {
		t.Fatal("headerHas")
	}
}
