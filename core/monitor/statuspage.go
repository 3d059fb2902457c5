package monitor

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"sync"
	"time"
)

// StatusAssetsPath is the folder the status page's style sheet and script
// are served from (GET /status/status.css, /status/status.js).
const StatusAssetsPath = "/status/"

// statusFiles holds the status page: the HTML template served at / and
// the assets under StatusAssetsPath. Nothing is fetched from elsewhere.
//
//go:embed status/index.html status/status.css status/status.js
var statusFiles embed.FS

// statusAsset is one embedded file served under StatusAssetsPath.
type statusAsset struct {
	body        []byte
	contentType string
	etag        string // a strong validator: the content's hash
}

// statusPage is the parsed template and the assets, loaded once.
type statusPage struct {
	tmpl    *template.Template
	assets  map[string]statusAsset // by file name
	version string                 // a short hash over the assets, appended to their URLs
}

// statusPageData is what the template renders without JavaScript.
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

// newStatusPage loads the embedded files; they are part of the binary, so
// a failure is a build mistake and panics.
func newStatusPage() *statusPage {
	sp := &statusPage{
		tmpl:   template.Must(template.ParseFS(statusFiles, "status/index.html")),
		assets: make(map[string]statusAsset),
	}
	types := map[string]string{
		".css": "text/css; charset=utf-8",
		".js":  "text/javascript; charset=utf-8",
	}
	all := sha256.New()
	for _, name := range []string{"status.css", "status.js"} {
		body, err := fs.ReadFile(statusFiles, "status/"+name)
		if err != nil {
			panic("monitor: embedded status page: " + err.Error())
		}
		sum := sha256.Sum256(body)
		sp.assets[name] = statusAsset{
			body:        body,
			contentType: types[path.Ext(name)],
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
	var buf bytes.Buffer
	data := statusPageData{ServerID: h.p.ServerID(), Version: h.page.version}
	data.Name = data.ServerID
	if v := h.p.Varz(); v != nil && v.Name != "" {
		data.Name = v.Name
	}
	for _, e := range endpoints {
		data.Endpoints = append(data.Endpoints, statusLink{Path: e.path, Title: e.title})
	}
	if err := h.page.tmpl.Execute(&buf, data); err != nil {
		http.Error(w, "monitor: status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(buf.Bytes())
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
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
