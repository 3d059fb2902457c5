package subject_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/nats-io/nats.go"
)

// referenceTopics are the topics whose subjects nats-server v2.15.2 gives
// as SubjectFromTopic does (leafbox's own extensions, for topics that
// nats-server refuses, are tested in mqtt_test.go).
var referenceTopics = []string{
	"temp", "sensors/floor3/temp", "/a", "a/", "/", "//", "a//b", "a///b",
	"spBv1.0/plant1/NDATA/edge1", ".", "a./b", "..", "$SYS/broker/uptime", "a*b/c>d", "ünïcode/温度",
}

// referenceSubjects are subjects published by NATS clients, with the
// topics MQTT subscribers of nats-server receive, as TopicFromSubject
// gives them: those of referenceTopics and ones no topic maps to.
var referenceSubjects = []string{"a/b", "a/.b", "x/zz", "x/41", "a.b/", "a//.b"}

// TestTopicMappingMatchesNATSServer publishes the reference topics with
// mosquitto_pub into a real nats-server's MQTT listener and reads their
// subjects with nats.go, then the reverse with mosquitto_sub, so that
// leafbox's mapping is the one nats-server users already see.
func TestTopicMappingMatchesNATSServer(t *testing.T) {
	for _, tool := range []string{"mosquitto_pub", "mosquitto_sub"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Debian package mosquitto-clients; scripts/test installs it): %v", tool, err)
		}
	}
	mqttPort := leaftest.FreePort(t)
	conf := filepath.Join(t.TempDir(), "mqttref.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`server_name: mqttref
listen: 127.0.0.1:-1
leafnodes { listen: 127.0.0.1:-1 }
jetstream { store_dir: %q }
mqtt { listen: 127.0.0.1:%d }
`, t.TempDir(), mqttPort)), 0o600); err != nil {
		t.Fatal(err)
	}
	hub := leaftest.StartHubFile(t, "mqttref", conf)
	waitListening(t, mqttPort)
	nc, err := nats.Connect(hub.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	// MQTT → NATS.
	sub, err := nc.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, topic := range referenceTopics {
		want, err := subject.SubjectFromTopic(topic)
		if err != nil {
			t.Fatalf("SubjectFromTopic(%q): %v", topic, err)
		}
		out, err := exec.Command("mosquitto_pub", "-V", "mqttv311", "-h", "127.0.0.1", "-p", strconv.Itoa(mqttPort),
			"-i", "ref-pub", "-t", topic, "-m", strconv.Itoa(i)).CombinedOutput()
		if err != nil {
			t.Fatalf("mosquitto_pub -t %q: %v: %s", topic, err, out)
		}
		msg := nextUserMsg(t, sub)
		if string(msg.Data) != strconv.Itoa(i) || msg.Subject != want {
			t.Errorf("topic %q: nats-server gives subject %q (payload %q); SubjectFromTopic gives %q",
				topic, msg.Subject, msg.Data, want)
		}
	}

	// NATS → MQTT.
	ms := exec.Command("mosquitto_sub", "-V", "mqttv311", "-h", "127.0.0.1", "-p", strconv.Itoa(mqttPort),
		"-i", "ref-sub", "-t", "#", "-F", "%p|%t")
	stdout, err := ms.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Process.Kill(); _ = ms.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The subscription is up once a probe published from NATS arrives.
	probe := time.NewTicker(50 * time.Millisecond)
	defer probe.Stop()
	deadline := time.After(10 * time.Second)
	for up := false; !up; {
		select {
		case <-probe.C:
			if err := nc.Publish("probe", []byte("probe")); err != nil {
				t.Fatal(err)
			}
		case l := <-lines:
			up = l == "probe|probe"
		case <-deadline:
			t.Fatal("mosquitto_sub received nothing from nats-server in 10s")
		}
	}
	var subjects []string
	for _, topic := range referenceTopics {
		if strings.HasPrefix(topic, "$") {
			continue // MQTT's "#" does not match topics that begin with '$'
		}
		s, _ := subject.SubjectFromTopic(topic)
		subjects = append(subjects, s)
	}
	subjects = append(subjects, referenceSubjects...)
	for i, subj := range subjects {
		if err := nc.Publish(subj, []byte("m"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		want := "m" + strconv.Itoa(i) + "|" + subject.TopicFromSubject(subj)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("mosquitto_sub ended")
				}
				if l == "probe|probe" {
					continue
				}
				if l != want {
					t.Errorf("subject %q: mosquitto_sub got %q from nats-server; TopicFromSubject gives %q", subj, l, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("subject %q: nothing reached mosquitto_sub in 10s", subj)
			}
			break
		}
	}
}

// nextUserMsg returns the next message that is not nats-server's own MQTT
// bookkeeping ($MQTT.>, $JS.>).
func nextUserMsg(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	for {
		msg, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("waiting for the MQTT publish on NATS: %v", err)
		}
		if !strings.HasPrefix(msg.Subject, "$MQTT.") && !strings.HasPrefix(msg.Subject, "$JS.") &&
			!strings.HasPrefix(msg.Subject, "_INBOX.") {
			return msg
		}
	}
}

// waitListening waits until something accepts TCP connections on port.
func waitListening(t *testing.T, port int) {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		<-time.After(20 * time.Millisecond)
	}
}
