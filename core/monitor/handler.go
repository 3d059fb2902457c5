package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The monitoring paths, as nats-server names them.
const (
	RootPath           = "/"               // RootPath serves an HTML index of the endpoints.
	VarzPath           = "/varz"           // VarzPath serves Varz.
	ConnzPath          = "/connz"          // ConnzPath serves Connz.
	SubszPath          = "/subsz"          // SubszPath serves Subsz.
	SubscriptionszPath = "/subscriptionsz" // SubscriptionszPath is an alias of SubszPath, counted under it in http_req_stats.
	AccountzPath       = "/accountz"       // AccountzPath serves Accountz.
	HealthzPath        = "/healthz"        // HealthzPath serves Healthz.
	JszPath            = "/jsz"            // JszPath serves Jsz.
	LeafzPath          = "/leafz"          // LeafzPath serves Leafz.
	UplinkzPath        = "/uplinkz"        // UplinkzPath serves Uplinkz, a leafbox extension.
	RoutezPath         = "/routez"         // RoutezPath serves an empty Routez.
	GatewayzPath       = "/gatewayz"       // GatewayzPath serves an empty Gatewayz.
	MetricsPath        = "/metrics"        // MetricsPath serves Prometheus metrics.
)

// endpoint is one entry of the index page.
type endpoint struct {
	path, title string
}

// endpoints lists the paths in index-page order.
var endpoints = []endpoint{
	{VarzPath, "General"},
	{JszPath, "JetStream"},
	{ConnzPath, "Connections"},
	{AccountzPath, "Accounts"},
	{SubszPath, "Subscriptions"},
	{RoutezPath, "Routes"},
	{LeafzPath, "LeafNodes"},
	{UplinkzPath, "Uplinks"},
	{BridgezPath, "Bridges"},
	{GatewayzPath, "Gateways"},
	{HealthzPath, "Health Probe"},
	{MetricsPath, "Prometheus Metrics"},
}

// handler serves the monitoring endpoints over a Provider.
type handler struct {
	p        Provider
	mux      *http.ServeMux
	reqStats map[string]*atomic.Uint64 // fixed at construction; values atomic
	proc     *processSampler
	now      func() time.Time
}

// NewHandler returns the monitoring HTTP handler over p. It serves /,
// /varz, /connz, /subsz, /subscriptionsz, /accountz, /healthz, /jsz,
// /leafz, /uplinkz (with /uplinkz/deadletter and, by POST,
// /uplinkz/deadletter/requeue), /bridgez, /routez, /gatewayz and /metrics; any other path is 404. Every
// response carries Access-Control-Allow-Origin: *. JSON responses have
// Content-Type application/json, or application/javascript when a valid
// JSONP callback parameter wraps them. A bad query parameter is answered
// with 400 and a plain-text message worded as nats-server words it.
// The handler counts the requests per path and reports them as
// http_req_stats in /varz and in /metrics.
func NewHandler(p Provider) http.Handler {
	h := &handler{
		p:        p,
		mux:      http.NewServeMux(),
		reqStats: make(map[string]*atomic.Uint64),
		now:      time.Now,
	}
	h.proc = newProcessSampler(h.now())
	h.route("/{$}", RootPath, h.serveRoot)
	h.route(VarzPath, VarzPath, h.serveVarz)
	h.route(ConnzPath, ConnzPath, h.serveConnz)
	h.route(SubszPath, SubszPath, h.serveSubsz)
	h.route(SubscriptionszPath, SubszPath, h.serveSubsz)
	h.route(AccountzPath, AccountzPath, h.serveAccountz)
	h.route(HealthzPath, HealthzPath, h.serveHealthz)
	h.route(JszPath, JszPath, h.serveJsz)
	h.route(LeafzPath, LeafzPath, h.serveLeafz)
	h.route(UplinkzPath, UplinkzPath, h.serveUplinkz)
	h.route("GET "+DeadLetterzPath, DeadLetterzPath, h.serveDeadLetterz)
	h.route("POST "+RequeuePath, RequeuePath, h.serveRequeue)
	h.route(BridgezPath, BridgezPath, h.serveBridgez)
	h.route(RoutezPath, RoutezPath, h.serveRoutez)
	h.route(GatewayzPath, GatewayzPath, h.serveGatewayz)
	h.route(MetricsPath, MetricsPath, h.serveMetrics)
	return h
}

// route registers fn under pattern, counting its requests under statKey.
func (h *handler) route(pattern, statKey string, fn http.HandlerFunc) {
	counter, ok := h.reqStats[statKey]
	if !ok {
		counter = new(atomic.Uint64)
		h.reqStats[statKey] = counter
	}
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		counter.Add(1)
		fn(w, r)
	})
}

// ServeHTTP sets the CORS header on every response and dispatches.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	h.mux.ServeHTTP(w, r)
}

// requestStats returns the request counts of the paths requested so far.
func (h *handler) requestStats() map[string]uint64 {
	m := make(map[string]uint64, len(h.reqStats))
	for path, c := range h.reqStats {
		if n := c.Load(); n > 0 {
			m[path] = n
		}
	}
	return m
}

// varz returns the provider's Varz completed by the monitor. r, if not
// nil, supplies the monitoring address when the provider left it unset.
func (h *handler) varz(r *http.Request, now time.Time) *Varz {
	// Complete a shallow copy: the provider's value is only read.
	var v Varz
	if pv := h.p.Varz(); pv != nil {
		v = *pv
	}
	if v.ID == "" {
		v.ID = h.p.ServerID()
	}
	if v.HTTPHost == "" && v.HTTPPort == 0 && r != nil {
		if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if host, port, err := net.SplitHostPort(addr.String()); err == nil {
				v.HTTPHost = host
				v.HTTPPort, _ = strconv.Atoi(port)
			}
		}
	}
	completeVarz(&v, now, h.requestStats(), h.proc)
	v.Clock = clockInfo(h.p)
	return &v
}

func (h *handler) serveRoot(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>leafbox monitoring</title></head>\n<body>\n")
	fmt.Fprintf(&b, "<h1>leafbox</h1>\n<p>Server %s</p>\n<ul>\n", html.EscapeString(h.p.ServerID()))
	for _, e := range endpoints {
		// Relative links keep working behind a path prefix.
		fmt.Fprintf(&b, "<li><a href=\".%s\">%s</a> <code>%s</code></li>\n", e.path, e.title, e.path)
	}
	b.WriteString("</ul>\n</body>\n</html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

func (h *handler) serveVarz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, h.varz(r, h.now()), true)
}

func (h *handler) serveConnz(w http.ResponseWriter, r *http.Request) {
	q := query{v: r.URL.Query()}
	// Parameters are decoded in nats-server's order, so the first bad one
	// is the one reported.
	opts := ConnzOptions{Sort: SortOpt(q.v.Get("sort"))}
	opts.Username = q.bool("auth")
	opts.Subscriptions, opts.SubscriptionsDetail = q.subs()
	opts.Offset = q.int("offset")
	opts.Limit = q.int("limit")
	opts.CID = q.uint64("cid")
	opts.State = q.state()
	opts.User = q.v.Get("user")
	opts.Account = q.v.Get("acc")
	if q.err == nil {
		q.err = opts.normalize()
	}
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	snaps := h.p.Connections(opts.State, opts.Subscriptions || opts.SubscriptionsDetail)
	cz := buildConnz(h.p.ServerID(), h.now(), opts, snaps)
	writeJSON(w, r, http.StatusOK, cz, true)
}

func (h *handler) serveSubsz(w http.ResponseWriter, r *http.Request) {
	q := query{v: r.URL.Query()}
	opts := SubszOptions{
		Subscriptions: q.bool("subs"),
		Offset:        q.int("offset"),
		Limit:         q.int("limit"),
		Test:          q.v.Get("test"),
		Account:       q.v.Get("acc"),
	}
	if q.err == nil {
		q.err = opts.normalize()
	}
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	var subs []SubDetail
	if opts.Subscriptions {
		subs = h.p.Subscriptions(opts.Account)
	}
	sz := buildSubsz(h.p.ServerID(), h.now(), opts, h.p.SublistStats(opts.Account), subs)
	writeJSON(w, r, http.StatusOK, sz, true)
}

func (h *handler) serveAccountz(w http.ResponseWriter, r *http.Request) {
	az, err := buildAccountz(h.p, h.now(), r.URL.Query().Get("acc"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, r, http.StatusOK, az, true)
}

func (h *handler) serveHealthz(w http.ResponseWriter, r *http.Request) {
	q := query{v: r.URL.Query()}
	jsEnabled := q.bool("js-enabled") // deprecated alias of js-enabled-only
	opts := HealthzOptions{
		JSEnabledOnly: q.bool("js-enabled-only"),
		JSServerOnly:  q.bool("js-server-only"),
		JSMetaOnly:    q.bool("js-meta-only"),
		Details:       q.bool("details"),
		Account:       q.v.Get("account"),
		Stream:        q.v.Get("stream"),
		Consumer:      q.v.Get("consumer"),
		Uplinks:       q.bool("uplinks"),
	}
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	opts.JSEnabledOnly = opts.JSEnabledOnly || jsEnabled
	hz, code := checkHealth(h.p, opts)
	hz.Clock = clockInfo(h.p)
	writeJSON(w, r, code, hz, false)
}

func (h *handler) serveJsz(w http.ResponseWriter, r *http.Request) {
	q := query{v: r.URL.Query()}
	opts := JszOptions{
		Accounts:         q.bool("accounts"),
		Streams:          q.bool("streams"),
		Consumers:        q.bool("consumers"),
		DirectConsumers:  q.bool("direct-consumers"),
		Config:           q.bool("config"),
		Offset:           q.int("offset"),
		Limit:            q.int("limit"),
		LeaderOnly:       q.bool("leader-only"),
		RaftGroups:       q.bool("raft"),
		StreamLeaderOnly: q.bool("stream-leader-only"),
		Account:          q.v.Get("acc"),
	}
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	opts.normalize()
	jz := Jsz{Disabled: true}
	if js, ok := h.p.(JetStreamProvider); ok {
		got, err := js.Jsz(opts)
		if err != nil {
			writeError(w, err)
			return
		}
		if got != nil {
			jz = *got // a shallow copy, completed below
		}
	}
	jz.ID = h.p.ServerID()
	jz.Now = h.now().UTC()
	writeJSON(w, r, http.StatusOK, &jz, true)
}

func (h *handler) serveLeafz(w http.ResponseWriter, r *http.Request) {
	q := query{v: r.URL.Query()}
	subs := q.bool("subs")
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	var leafs []LeafInfo
	if lp, ok := h.p.(LeafProvider); ok {
		leafs = lp.Leafs(subs)
	}
	lz := buildLeafz(h.p.ServerID(), h.now(), q.v.Get("acc"), leafs)
	writeJSON(w, r, http.StatusOK, lz, true)
}

func (h *handler) serveUplinkz(w http.ResponseWriter, r *http.Request) {
	var uplinks []UplinkInfo
	if up, ok := h.p.(UplinkProvider); ok {
		uplinks = up.Uplinks()
	}
	uz := buildUplinkz(h.p.ServerID(), h.now(), uplinks)
	uz.Clock = clockInfo(h.p)
	if lp, ok := h.p.(UplinkLimitsProvider); ok {
		uz.Limits = lp.UplinkLimits()
	}
	if dp, ok := h.p.(DownlinkProvider); ok {
		uz.Downlinks = dp.Downlinks()
	}
	writeJSON(w, r, http.StatusOK, uz, true)
}

func (h *handler) serveRoutez(w http.ResponseWriter, r *http.Request) {
	q := query{v: r.URL.Query()}
	q.subs()
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	rz := &Routez{ID: h.p.ServerID(), Now: h.now().UTC(), Routes: []any{}}
	if v := h.p.Varz(); v != nil {
		rz.Name = v.Name
	}
	writeJSON(w, r, http.StatusOK, rz, true)
}

func (h *handler) serveGatewayz(w http.ResponseWriter, r *http.Request) {
	q := query{v: r.URL.Query()}
	q.subs()
	q.bool("accs")
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	gz := &Gatewayz{
		ID:               h.p.ServerID(),
		Now:              h.now().UTC(),
		OutboundGateways: map[string]any{},
		InboundGateways:  map[string]any{},
	}
	writeJSON(w, r, http.StatusOK, gz, true)
}

func (h *handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	now := h.now()
	var buf bytes.Buffer
	m := NewMetricWriter(&buf)
	writeVarzMetrics(m, h.varz(r, now), now)
	writeBridgeMetrics(m, h.bridges())
	if err := m.Err(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if src, ok := h.p.(MetricsSource); ok {
		src.WriteMetrics(&buf)
	}
	w.Header().Set("Content-Type", metricsContentType)
	_, _ = w.Write(buf.Bytes())
}

// query decodes query parameters, keeping the first error in nats-server's
// wording.
type query struct {
	v   url.Values
	err error
}

func (q *query) fail(format string, args ...any) {
	if q.err == nil {
		q.err = fmt.Errorf(format, args...)
	}
}

// bool decodes a boolean as strconv.ParseBool does ("1", "true", "0", ...);
// absent is false.
func (q *query) bool(name string) bool {
	s := q.v.Get(name)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		q.fail("Error decoding boolean for '%s': %v", name, err)
	}
	return b
}

// int decodes a decimal int; absent is 0.
func (q *query) int(name string) int {
	s := q.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		q.fail("Error decoding int for '%s': %v", name, err)
	}
	return n
}

// uint64 decodes a decimal uint64; absent is 0.
func (q *query) uint64(name string) uint64 {
	s := q.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		q.fail("Error decoding uint64 for '%s': %v", name, err)
	}
	return n
}

// subs decodes the subs parameter: "detail" or a boolean.
func (q *query) subs() (subs, detail bool) {
	if strings.EqualFold(q.v.Get("subs"), "detail") {
		return false, true
	}
	return q.bool("subs"), false
}

// state decodes the state parameter: open (the default), closed, any or all.
func (q *query) state() ConnState {
	s := q.v.Get("state")
	switch strings.ToLower(s) {
	case "", "open":
		return ConnOpen
	case "closed":
		return ConnClosed
	case "any", "all":
		return ConnAll
	}
	q.fail("Error decoding state for %s", s)
	return ConnOpen
}

// writeError answers 400 with err's text, as nats-server does.
func writeError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(err.Error()))
}

// writeJSON answers code with v as JSON, indented like nats-server's
// documents unless compact, and wrapped in a call when the request names a
// valid JSONP callback.
func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any, indent bool) {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		http.Error(w, "monitor: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if cb := r.URL.Query().Get("callback"); cb != "" {
		if !validCallback(cb) {
			writeError(w, fmt.Errorf("invalid callback: %q", cb))
			return
		}
		w.Header().Set("Content-Type", "application/javascript")
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, "%s(%s)", cb, b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// validCallback reports whether s is a dotted JavaScript identifier path
// such as "cb" or "app.handlers.varz", which cannot smuggle script.
func validCallback(s string) bool {
	if len(s) > 128 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			ok := c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0
			if !ok {
				return false
			}
		}
	}
	return true
}
