package monitor

import (
	"crypto/sha256"
	_ "embed" // the status page's files
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// StatusAssetsPath is the folder the status page's style sheet and script
// are served from (GET /status/status.css, /status/status.js).
const StatusAssetsPath = "/status/"

// statusHTML, statusCSS and statusJS are the status page: the HTML served
// at / and the assets under StatusAssetsPath. Nothing is fetched from
// elsewhere. They are embedded as strings, not as an embed.FS, whose file
// system code the binary then does without.
//
// index.html is not a html/template: it has four placeholders,
// {{version}}, {{name}}, {{server_id}} and {{endpoints}}, which
// renderStatusPage fills with HTML-escaped text. (html/template, like
// text/template, calls reflect's Method by name, which makes the linker
// keep every exported method of every type in the binary: about 1 MB on
// ARM.)
//
//go:embed status/index.html
var statusHTML string

//go:embed status/status.css
var statusCSS string

//go:embed status/status.js
var statusJS string

// statusAsset is one embedded file served under StatusAssetsPath.
type statusAsset struct {
	body        []byte
	contentType string
	etag        string // a strong validator: the content's hash
}

// statusPage is the page and its assets, loaded once.
type statusPage struct {
	html    string                 // index.html, with its placeholders
	assets  map[string]statusAsset // by file name
	version string                 // a short hash over the assets, appended to their URLs
}

// statusPageData is what the page shows without JavaScript.
type statusPageData struct {
	Name      string // the server's name, or its id when unnamed
	ServerID  string
	Endpoints []statusLink
	// Version is appended to asset URLs so that a new binary's page never
	// runs an old cached script.
	Version string
}

// loadStatusPage returns the status page, loaded on first use.
var loadStatusPage = sync.OnceValue(newStatusPage)

// statusLink is one entry of the page's list of endpoints.
type statusLink struct {
	Path, Title string
}

// render returns the page with its placeholders filled in; every value
// is HTML-escaped (quotes too, so a value is safe in an attribute).
func (sp *statusPage) render(d statusPageData) string {
	var links strings.Builder
	for i, e := range d.Endpoints {
		if i > 0 {
			links.WriteByte('\n')
		}
		p := escapeHTML(e.Path)
		links.WriteString(`    <li><a href=".` + p + `">` + escapeHTML(e.Title) + `</a> <code>` + p + `</code></li>`)
	}
	return strings.NewReplacer(
		"{{version}}", escapeHTML(d.Version),
		"{{name}}", escapeHTML(d.Name),
		"{{server_id}}", escapeHTML(d.ServerID),
		"{{endpoints}}", links.String(),
	).Replace(sp.html)
}

// escapeHTML escapes s as html.EscapeString does: <, >, &, ' and " become
// &lt; &gt; &amp; &#39; &#34; (a loop here: the html package is 1.5 KB of
// an ARM binary for these few values).
func escapeHTML(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '&':
			esc = "&amp;"
		case '\'':
			esc = "&#39;"
		case '"':
			esc = "&#34;"
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(esc)
		last = i + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// newStatusPage loads the embedded files.
func newStatusPage() *statusPage {
	sp := &statusPage{html: statusHTML, assets: make(map[string]statusAsset)}
	all := sha256.New()
	for _, f := range []struct{ name, body, contentType string }{
		{"status.css", statusCSS, "text/css; charset=utf-8"},
		{"status.js", statusJS, "text/javascript; charset=utf-8"},
	} {
		sum := sha256.Sum256([]byte(f.body))
		sp.assets[f.name] = statusAsset{
			body:        []byte(f.body),
			contentType: f.contentType,
			etag:        `"` + hex.EncodeToString(sum[:8]) + `"`,
		}
		all.Write(sum[:])
	}
	sp.version = hex.EncodeToString(all.Sum(nil)[:6])
	return sp
}

// setPageHeaders sets the headers every status-page response carries: no
// framing, no sniffing, no referrer, and a policy that runs only the
// page's own script and reaches only this server.
func setPageHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
		"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
}

// serveRoot serves the status page. The HTML names this server and links
// every endpoint, so it is readable without JavaScript; the script fills
// in the live values from the JSON endpoints. It is revalidated on every
// load (Cache-Control: no-cache) because it names the server.
func (h *handler) serveRoot(w http.ResponseWriter, r *http.Request) {
	data := statusPageData{ServerID: h.p.ServerID(), Version: h.page.version}
	data.Name = data.ServerID
	if v := h.p.Varz(); v != nil && v.Name != "" {
		data.Name = v.Name
	}
	for _, e := range endpoints {
		data.Endpoints = append(data.Endpoints, statusLink{Path: e.path, Title: e.title})
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, h.page.render(data))
}

// serveStatusAsset serves an embedded style sheet or script with a strong
// ETag, so a browser revalidates it cheaply (304) instead of fetching it
// again; an unknown name is 404.
func (h *handler) serveStatusAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := h.page.assets[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	// Written here rather than by http.ServeContent, whose range requests
	// and file-name content types (the mime and mime/multipart packages)
	// these small assets do not need: about 30 KB of the binary.
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		h := w.Header()
		h.Del("Content-Type")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

// etagMatches reports whether an If-None-Match header names etag: "*", or
// a comma-separated list with etag in it, compared weakly (a W/ prefix
// ignored), as RFC 9110 section 13.1.2 asks.
func etagMatches(header, etag string) bool {
	etag = strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || (t != "" && strings.TrimPrefix(t, "W/") == etag) {
			return true
		}
	}
	return false
}
