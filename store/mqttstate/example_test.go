package mqttstate_test

import (
	"fmt"
	"os"

	"github.com/leafbox/leafbox/store/mqttstate"
)

// A persistent session's life as the listener drives it: store the session
// at CONNECT, queue QoS 1/2 messages, give each a packet id as it is sent,
// release it on PUBACK (QoS 2: MarkPubrec on PUBREC, Release on PUBCOMP),
// and after a restart resend what Queue still holds.
func Example() {
	dir, _ := os.MkdirTemp("", "mqttstate")
	defer os.RemoveAll(dir)
	open := func() *mqttstate.Store {
		s, err := mqttstate.Open(mqttstate.Options{Backend: mqttstate.Files{Dir: dir}, Account: "SITE"})
		if err != nil {
			panic(err)
		}
		return s
	}
	s := open()
	_ = s.PutSession(mqttstate.Session{ClientID: "plc-7", Version: 5, ExpiryInterval: 3600,
		Subs: []mqttstate.Sub{{Filter: "cmd/plc-7/#", QoS: 2}}})
	one, _ := s.Enqueue("plc-7", mqttstate.Msg{Topic: "cmd/plc-7/start", QoS: 1, Payload: []byte("go")})
	two, _ := s.Enqueue("plc-7", mqttstate.Msg{Topic: "cmd/plc-7/speed", QoS: 2, Payload: []byte("40")})
	_ = s.AssignPacketID("plc-7", one, 1)
	_ = s.AssignPacketID("plc-7", two, 2)
	_ = s.MarkPubrec("plc-7", two) // PUBREC in: PUBREL owed
	_ = s.Release("plc-7", one)    // PUBACK in
	_ = s.SetRetained("status/plc-7", mqttstate.Msg{QoS: 1, Payload: []byte("online")})
	_ = s.Close()

	s = open() // after a restart (or a kill -9)
	defer s.Close()
	sessions, _ := s.LoadSessions()
	for _, sess := range sessions {
		q, _ := s.Queue(sess.ClientID, 0, 0)
		for _, m := range q {
			fmt.Printf("%s: %s pid=%d pubrec=%v\n", sess.ClientID, m.Topic, m.PacketID, m.Pubrec)
		}
	}
	retained, _ := s.Retained("status/+")
	for _, m := range retained {
		fmt.Printf("retained %s=%s\n", m.Topic, m.Payload)
	}
	// Output:
	// plc-7: cmd/plc-7/speed pid=2 pubrec=true
	// retained status/plc-7=online
}
