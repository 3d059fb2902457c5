package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The leaf rows measure store-and-forward toward a hub. Each run starts a
// hub (always nats-server, JetStream domain "hub", a file stream SITE1 on
// site1.>) and a gateway of the side under test, joined through a
// linkProxy, and publishes telemetry on the gateway's client port:
//
//   - leafbox is the gateway with an uplink capturing telemetry.> and
//     forwarding it as site1.telemetry.> into SITE1;
//   - nats-server is the gateway in its own store-and-forward pattern: a
//     leaf with JetStream domain "edge" and a local file stream TELEMETRY
//     on telemetry.>, which SITE1 on the hub sources by domain
//     ($JS.edge.API) with a subject transform to site1.telemetry.>.
//
// Both end with the same N messages on the same subjects in SITE1.

// Names the leaf rows use on both servers.
const (
	hubStream     = "SITE1"
	gatewayStream = "TELEMETRY"
	hubDomain     = "hub"
	gatewayDomain = "edge"
)

// leafPoll is how often the hub's stream is polled for its message count.
const leafPoll = 10 * time.Millisecond

// Compression modes of the gateway's leafnode remote in the leaf rows.
const (
	compressOff  = "off"
	compressAuto = "s2_auto"
	compressFast = "s2_fast"
)

// hubSetup returns the setup of the hub: nats-server on loopback with a
// leafnode listener on a kernel-chosen port that follows whatever
// compression each gateway asks for, and JetStream in domain "hub".
func hubSetup(dir string) serverSetup {
	path := filepath.Join(dir, "hub.conf")
	conf := fmt.Sprintf(`server_name: hub
listen: "127.0.0.1:-1"
http: "127.0.0.1:-1"
ports_file_dir: %s
jetstream { store_dir: %s, domain: %s }
leafnodes { listen: "127.0.0.1:-1", compression: accept }
`, strconv.Quote(dir), strconv.Quote(filepath.Join(dir, "store")), hubDomain)
	return serverSetup{args: []string{"--config", path}, configPath: path, config: conf}
}

// gatewaySetup returns the setup of a gateway of the given style whose one
// leafnode remote is hubAddr (host:port) with the given compression.
func gatewaySetup(style serverStyle, dir, hubAddr, compression string) (serverSetup, error) {
	store := strconv.Quote(filepath.Join(dir, "store"))
	url := strconv.Quote("nats-leaf://" + hubAddr)
	switch style {
	case styleLeafbox:
		path := filepath.Join(dir, "leafbox.yaml")
		conf := fmt.Sprintf(`server_name: gateway
jetstream:
  store_dir: %s
leafnodes:
  remotes:
    - url: %s
      compression: %s
uplinks:
  - name: telemetry
    subjects: ["telemetry.>"]
    hub_subject_prefix: site1.
    stream: %s
    hub_domain: %s     # as deploy/examples/gateway-to-hub.yaml: the hub's time vouches for the clock, so captures carry Leafbox-Time
    drain_jitter: 0s   # measure the drain itself, not the fleet-spreading delay (default 3s)
`, store, url, compression, hubStream, hubDomain)
		return serverSetup{configPath: path, config: conf, args: []string{"run", "--config", path,
			"--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir}}, nil
	case styleNATS:
		path := filepath.Join(dir, "gateway.conf")
		conf := fmt.Sprintf(`server_name: gateway
listen: "127.0.0.1:-1"
http: "127.0.0.1:-1"
ports_file_dir: %s
jetstream { store_dir: %s, domain: %s }
leafnodes { remotes [ { url: %s, compression: %s } ] }
`, strconv.Quote(dir), store, gatewayDomain, url, compression)
		return serverSetup{configPath: path, config: conf, args: []string{"--config", path}}, nil
	}
	return serverSetup{}, fmt.Errorf("benchcmp: unknown server style %q", style)
}

// streamConfig is the part of a JetStream stream configuration the leaf
// rows set, as `nats stream add --config` reads it.
type streamConfig struct {
	Name     string         `json:"name"`
	Subjects []string       `json:"subjects,omitempty"`
	Storage  string         `json:"storage"`
	Replicas int            `json:"num_replicas"`
	Sources  []streamSource `json:"sources,omitempty"`
	// Batched is allow_batched: the stream takes JetStream fast batch
	// publishes, which leafbox's uplink forwards in.
	Batched bool `json:"allow_batched,omitempty"`
}

// streamSource is a source of a stream in another JetStream domain.
type streamSource struct {
	Name       string             `json:"name"`
	External   *externalStream    `json:"external,omitempty"`
	Transforms []subjectTransform `json:"subject_transforms,omitempty"`
}

// externalStream names the JetStream API prefix of another domain.
type externalStream struct {
	API string `json:"api"`
}

// subjectTransform maps source subjects to the stream's.
type subjectTransform struct {
	Src  string `json:"src"`
	Dest string `json:"dest"`
}

// hubStreamConfig returns SITE1's configuration: with a source from the
// gateway's TELEMETRY stream in domain "edge" when sourcing is true (the
// nats-server gateway), without one otherwise (leafbox's uplink publishes
// into it, in fast batches: allow_batched).
func hubStreamConfig(sourcing bool) streamConfig {
	sc := streamConfig{Name: hubStream, Subjects: []string{"site1.>"}, Storage: storageFile, Replicas: 1, Batched: !sourcing}
	if sourcing {
		sc.Sources = []streamSource{{
			Name:       gatewayStream,
			External:   &externalStream{API: "$JS." + gatewayDomain + ".API"},
			Transforms: []subjectTransform{{Src: "telemetry.>", Dest: "site1.telemetry.>"}},
		}}
	}
	return sc
}

// addStream creates a stream with `nats stream add --config`.
func (m *measurer) addStream(ctx context.Context, srv *server, dir string, sc streamConfig) error {
	b, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, strings.ToLower(sc.Name)+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("benchcmp: %w", err)
	}
	_, err = m.nats.run(ctx, "nats://"+srv.clientAddr, "stream", "add", "--config", path)
	return err
}

// leafPort returns the leafnode listener port from a /varz answer.
func leafPort(varz []byte) (int, error) {
	var vz struct {
		Leaf struct {
			Port int `json:"port"`
		} `json:"leaf"`
	}
	if err := json.Unmarshal(varz, &vz); err != nil {
		return 0, fmt.Errorf("benchcmp: /varz: %w", err)
	}
	if vz.Leaf.Port <= 0 {
		return 0, fmt.Errorf("benchcmp: /varz shows no leafnode listener")
	}
	return vz.Leaf.Port, nil
}

// leafzLinks returns how many leafnode connections a /leafz answer lists
// and the compression of the first.
func leafzLinks(leafz []byte) (int, string, error) {
	var lz struct {
		Leafs []struct {
			Compression string `json:"compression"`
		} `json:"leafs"`
	}
	if err := json.Unmarshal(leafz, &lz); err != nil {
		return 0, "", fmt.Errorf("benchcmp: /leafz: %w", err)
	}
	if len(lz.Leafs) == 0 {
		return 0, "", nil
	}
	return len(lz.Leafs), lz.Leafs[0].Compression, nil
}

// jszStreamMsgs returns the message count of the named stream from a
// /jsz?streams=true answer, and false when the stream is not listed.
func jszStreamMsgs(jsz []byte, name string) (uint64, bool, error) {
	var jz struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Msgs uint64 `json:"messages"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.Unmarshal(jsz, &jz); err != nil {
		return 0, false, fmt.Errorf("benchcmp: /jsz: %w", err)
	}
	for _, a := range jz.Accounts {
		for _, s := range a.Streams {
			if s.Name == name {
				return s.State.Msgs, true, nil
			}
		}
	}
	return 0, false, nil
}

// getRaw fetches base+path and returns the body of a 200 answer.
func getRaw(ctx context.Context, base, path string) ([]byte, error) {
	var raw json.RawMessage
	if err := getJSON(ctx, base, path, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// leafRig is one leaf run's processes: the hub, the proxy and the gateway.
type leafRig struct {
	hub, gateway *server
	proxy        *linkProxy
	dir          string
	keep         bool
}

// stop stops the gateway, the proxy and the hub, and removes their
// stores unless they are to be kept.
func (r *leafRig) stop() {
	for _, s := range []*server{r.gateway, r.hub} {
		if s != nil {
			s.stop()
		}
	}
	if r.proxy != nil {
		r.proxy.close()
	}
	if !r.keep {
		os.RemoveAll(filepath.Join(r.dir, "hub", "store"))
		os.RemoveAll(filepath.Join(r.dir, "gateway", "store"))
	}
}

// startLeafRig starts the hub, a proxy to its leafnode port (up or not),
// and side's gateway with compression, and creates the streams: SITE1 on
// the hub, and for a nats-server gateway TELEMETRY on it first. With the
// link up it waits for the gateway to connect and returns the
// compression the hub reports for the link.
func (m *measurer) startLeafRig(ctx context.Context, f *fleet, sc scenario, side int, up bool) (*leafRig, string, error) {
	f.fresh++
	rig := &leafRig{dir: filepath.Join(f.workDir, fmt.Sprintf("leaf%03d-%s-server%d", f.fresh, sc.slug, side)), keep: f.keep}
	ok := false
	defer func() {
		if !ok {
			rig.stop()
		}
	}()
	hubDir := filepath.Join(rig.dir, "hub")
	var err error
	if rig.hub, err = startSetup(ctx, "hub (nats-server)", f.bins[sideReference], hubSetup(hubDir), hubDir); err != nil {
		return nil, "", err
	}
	varz, err := getRaw(ctx, rig.hub.monitorURL, "/varz")
	if err != nil {
		return nil, "", fmt.Errorf("benchcmp: hub: %w", err)
	}
	port, err := leafPort(varz)
	if err != nil {
		return nil, "", err
	}
	if rig.proxy, err = newLinkProxy("127.0.0.1:"+strconv.Itoa(port), up); err != nil {
		return nil, "", err
	}
	if sc.link.shaped() {
		rig.proxy.setShape(sc.link)
	}
	gwDir := filepath.Join(rig.dir, "gateway")
	setup, err := gatewaySetup(f.styles[side], gwDir, rig.proxy.addr(), sc.compression)
	if err != nil {
		return nil, "", err
	}
	if rig.gateway, err = startSetup(ctx, f.labels[side]+" (gateway)", f.bins[side], setup, gwDir); err != nil {
		return nil, "", err
	}
	sourcing := f.styles[side] == styleNATS
	if sourcing {
		gw := streamConfig{Name: gatewayStream, Subjects: []string{"telemetry.>"}, Storage: storageFile, Replicas: 1}
		if err := m.addStream(ctx, rig.gateway, gwDir, gw); err != nil {
			return nil, "", err
		}
	}
	compression := ""
	if up {
		if compression, err = waitLinked(ctx, rig.hub); err != nil {
			return nil, "", err
		}
	}
	if err := m.addStream(ctx, rig.hub, hubDir, hubStreamConfig(sourcing)); err != nil {
		return nil, "", err
	}
	ok = true
	return rig, compression, nil
}

// waitLinked polls the hub's /leafz until a gateway is connected and
// returns the link's compression as the hub reports it.
func waitLinked(ctx context.Context, hub *server) (string, error) {
	deadline := time.Now().Add(startTimeout)
	for {
		b, err := getRaw(ctx, hub.monitorURL, "/leafz")
		if err == nil {
			var n int
			var compression string
			if n, compression, err = leafzLinks(b); err == nil && n > 0 {
				return compression, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("benchcmp: no gateway connected to the hub after %v (last error: %v)", startTimeout, err)
		}
		if err := pause(ctx, pollInterval); err != nil {
			return "", err
		}
	}
}

// hubProgress is what waitHubStream saw: when the hub stream first held
// a message and when it held all of them.
type hubProgress struct {
	first, all time.Time
}

// waitHubStream polls the hub's SITE1 until it holds want messages or
// timeout passes, and also fails when the gateway or the hub exits.
func waitHubStream(ctx context.Context, rig *leafRig, want uint64, timeout time.Duration) (hubProgress, error) {
	var p hubProgress
	var have uint64
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range []*server{rig.hub, rig.gateway} {
			if err := s.alive(); err != nil {
				return p, err
			}
		}
		b, err := getRaw(ctx, rig.hub.monitorURL, "/jsz?streams=true")
		now := time.Now()
		if err == nil {
			var n uint64
			if n, _, err = jszStreamMsgs(b, hubStream); err == nil {
				have = n
				if n > 0 && p.first.IsZero() {
					p.first = now
				}
				if n >= want {
					p.all = now
					return p, nil
				}
			}
		}
		if now.After(deadline) {
			return p, fmt.Errorf("benchcmp: the hub stream holds %d of %d messages after %v (last error: %v)", have, want, timeout, err)
		}
		if err := pause(ctx, leafPoll); err != nil {
			return p, err
		}
	}
}

// rigCPU returns the CPU seconds the rig's gateway and hub have used so
// far, in that order. The difference over a forward run, per message,
// says which side each message costs: both patterns share the hub's
// binary, so its row compares what each gateway's way of forwarding asks
// of the hub.
func rigCPU(rig *leafRig) ([2]float64, error) {
	var cpu [2]float64
	for i, s := range []*server{rig.gateway, rig.hub} {
		v, err := readCPU(s.pid())
		if err != nil {
			return cpu, err
		}
		cpu[i] = v
	}
	return cpu, nil
}

// measureLeaf runs one leaf scenario on side and returns its values.
func (m *measurer) measureLeaf(ctx context.Context, f *fleet, sc scenario, side int) ([]float64, error) {
	up := sc.kind == kindLeafForward || sc.kind == kindLeafShaped
	rig, compression, err := m.startLeafRig(ctx, f, sc, side, up)
	if err != nil {
		return nil, err
	}
	defer rig.stop()
	limit := leafTimeout(m.nats.timeout, sc.msgs)

	switch sc.kind {
	case kindLeafForward:
		m.noteCompression(sc.compression, f.labels[side], compression)
		toHub0, fromHub0 := rig.proxy.bytes()
		cpu0, err := rigCPU(rig)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if err := publishTelemetry(ctx, rig.gateway.clientAddr, sc.msgs, sc.size, limit); err != nil {
			return nil, err
		}
		p, err := waitHubStream(ctx, rig, uint64(sc.msgs), limit)
		if err != nil {
			return nil, err
		}
		toHub, fromHub := rig.proxy.bytes()
		cpu1, err := rigCPU(rig)
		if err != nil {
			return nil, err
		}
		wire := float64(toHub-toHub0+fromHub-fromHub0) / float64(sc.msgs)
		m.logf("%s, %s: %.1f B/msg to the hub, %.1f B/msg back", f.labels[side], sc.compression,
			float64(toHub-toHub0)/float64(sc.msgs), float64(fromHub-fromHub0)/float64(sc.msgs))
		perMsg := func(i int) float64 { return (cpu1[i] - cpu0[i]) * 1e6 / float64(sc.msgs) }
		return []float64{float64(sc.msgs) / p.all.Sub(start).Seconds(), wire, perMsg(0), perMsg(1)}, nil

	case kindLeafShaped:
		m.noteCompression(sc.compression, f.labels[side], compression)
		return m.measureShaped(ctx, rig, sc, f.labels[side], limit)

	case kindLeafBacklog:
		if err := publishTelemetry(ctx, rig.gateway.clientAddr, sc.msgs, sc.size, limit); err != nil {
			return nil, err
		}
		rss, steady, err := steadyRSS(ctx, rig.gateway)
		if err != nil {
			return nil, err
		}
		if !steady {
			m.logf("%s: gateway RSS still moving after %v; took the last reading", f.labels[side], rssTimeout)
		}
		rig.proxy.setUp(true)
		linked, linkedAt := rig.proxy.linkedSince()
		select {
		case <-linked:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(leafRelinkTimeout):
			return nil, fmt.Errorf("benchcmp: the gateway did not reconnect within %v of the link coming up", leafRelinkTimeout)
		}
		p, err := waitHubStream(ctx, rig, uint64(sc.msgs), limit+leafRelinkTimeout)
		if err != nil {
			return nil, err
		}
		t0 := linkedAt()
		return []float64{float64(sc.msgs) / p.all.Sub(t0).Seconds(), float64(p.first.Sub(t0)) / float64(time.Millisecond), mib(rss)}, nil
	}
	return nil, fmt.Errorf("benchcmp: unknown leaf scenario kind %d", sc.kind)
}

// leafTimeoutMsgs is how many messages one -timeout covers in a leaf run,
// whose end-to-end rate can be a few thousand messages per second.
const leafTimeoutMsgs = 25_000

// leafTimeout returns the limit on publishing msgs messages in a leaf run
// and on their reaching the hub: base for up to leafTimeoutMsgs, one more
// base for each further leafTimeoutMsgs or part of it.
func leafTimeout(base time.Duration, msgs int) time.Duration {
	return base * time.Duration(max(1, (msgs+leafTimeoutMsgs-1)/leafTimeoutMsgs))
}

// leafRelinkTimeout bounds the wait for a gateway to reconnect once the
// link is back (leafbox backs off up to 30 s between attempts), and is
// added to the drain's limit for nats-server's stream source, which backs
// off up to 2 minutes between retries.
const leafRelinkTimeout = 2 * time.Minute

// noteCompression records, once per mode and side, the compression the
// hub reported when it differs from the mode asked for (s2_auto resolves
// to a level by RTT).
func (m *measurer) noteCompression(asked, label, got string) {
	if got == asked || got == "" {
		return
	}
	note := fmt.Sprintf("Leaf link compression: with %s asked of %s's gateway, the hub reported %q.", asked, label, got)
	for _, n := range m.notes {
		if n == note {
			return
		}
	}
	m.logf("%s", note)
	m.notes = append(m.notes, note)
}
