package monitor

import (
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestStatusPage(t *testing.T) {
	f := newFixture()
	f.varz.Name = `edge-<script>alert(1)</script>&"`
	h := newTestHandler(t, f)
	res, body := get(t, h, "/")
	page := string(body)
	require.Equal(t, res.StatusCode, http.StatusOK, "status")
	require.Equal(t, res.Header.Get("Content-Type"), "text/html; charset=utf-8", "Content-Type")
	require.Equal(t, res.Header.Get("Cache-Control"), "no-cache", "Cache-Control")
	require.Equal(t, res.Header.Get("X-Content-Type-Options"), "nosniff", "nosniff")
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy allows unsafe sources: %q", csp)
	}

	// The server's name is rendered as text, never as markup.
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "edge-&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#34;") {
		t.Errorf("server name not escaped:\n%s", page)
	}
	if !strings.Contains(page, "NSERVERID") {
		t.Error("page does not show the server id")
	}

	// The assets are the page's own, versioned by their content; nothing
	// comes from elsewhere and nothing runs inline.
	v := loadStatusPage().version
	for _, ref := range []string{`src="./status/status.js?v=` + v + `"`, `href="./status/status.css?v=` + v + `"`} {
		if !strings.Contains(page, ref) {
			t.Errorf("page does not reference %s", ref)
		}
	}
	for _, bad := range []string{"http://", "https://", "//cdn", " style=", " onload=", " onclick="} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1); len(scripts) != 1 || !strings.Contains(scripts[0], "src=") {
		t.Errorf("want one external script, got %q", scripts)
	}

	// Without JavaScript: the endpoints are listed, last on the page, and
	// the live sections stay hidden.
	footer := strings.Index(page, "<footer>")
	if footer < 0 || footer < strings.Index(page, `<main id="live" hidden>`) {
		t.Fatalf("the endpoints list is not a footer after the hidden live sections:\n%s", page)
	}
	for _, e := range endpoints {
		if !strings.Contains(page[footer:], `<a href=".`+e.path+`">`+e.title+`</a>`) {
			t.Errorf("footer does not link %s", e.path)
		}
	}
	if !strings.Contains(page, "<noscript>") {
		t.Error("no <noscript> note")
	}
	// The section bridges fill in later is there.
	if !strings.Contains(page, `id="bridges-body"`) {
		t.Error("no bridges section")
	}
	require.Equal(t, h.requestStats()["/"], uint64(1), "counted")
}

func TestStatusPageWithoutName(t *testing.T) {
	f := newFixture()
	f.varz.Name = ""
	_, body := get(t, newTestHandler(t, f), "/")
	if !strings.Contains(string(body), `<span id="name">NSERVERID</span>`) {
		t.Errorf("an unnamed server is not named by its id:\n%s", body)
	}
}

func TestStatusAssets(t *testing.T) {
	h := newTestHandler(t, newFixture())
	for _, tc := range []struct{ file, contentType string }{
		{"status.js", "text/javascript; charset=utf-8"},
		{"status.css", "text/css; charset=utf-8"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile("status/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			res, body := get(t, h, StatusAssetsPath+tc.file+"?v=anything")
			require.Equal(t, res.StatusCode, http.StatusOK, "status")
			require.Equal(t, res.Header.Get("Content-Type"), tc.contentType, "Content-Type")
			require.Equal(t, res.Header.Get("Cache-Control"), "no-cache", "Cache-Control")
			require.Equal(t, res.Header.Get("X-Content-Type-Options"), "nosniff", "nosniff")
			require.Equal(t, string(body), string(want), "body")
			etag := res.Header.Get("ETag")
			if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
				t.Fatalf("ETag %q", etag)
			}

			// Revalidation answers 304 without a body.
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, StatusAssetsPath+tc.file, nil)
			req.Header.Set("If-None-Match", etag)
			h.ServeHTTP(rec, req)
			require.Equal(t, rec.Code, http.StatusNotModified, "revalidated")
			require.Equal(t, rec.Body.Len(), 0, "304 body")

			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, StatusAssetsPath+tc.file, nil))
			require.Equal(t, rec.Code, http.StatusOK, "HEAD")
		})
	}
	for _, path := range []string{"/status/", "/status/index.html", "/status/nope.js", "/status/status.js/x", "/status"} {
		res, _ := get(t, h, path)
		require.Equal(t, res.StatusCode, http.StatusNotFound, "status of "+path)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, StatusAssetsPath+"status.js", nil))
	require.Equal(t, rec.Code, http.StatusMethodNotAllowed, "POST")
	require.Equal(t, h.requestStats()[StatusAssetsPath] > 0, true, "counted")
}

// TestStatusScript checks what the script may do: render data only as
// text, reach only this server's endpoints, and poll endpoints that exist
// (or /bridgez, which answers 404 until bridges come).
func TestStatusScript(t *testing.T) {
	js, err := os.ReadFile("status/status.js")
	if err != nil {
		t.Fatal(err)
	}
	src := string(js)
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "http://", "https://", "localStorage", "method: 'POST'"} {
		if strings.Contains(src, bad) {
			t.Errorf("status.js contains %q", bad)
		}
	}
	css, err := os.ReadFile("status/status.css")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"@import", "url(", "http"} {
		if strings.Contains(string(css), bad) {
			t.Errorf("status.css contains %q", bad)
		}
	}

	list := regexp.MustCompile(`\[((?:'[^']+',?\s*)+)\]\.map\(getJSON\)`).FindStringSubmatch(src)
	if list == nil {
		t.Fatal("status.js: no list of polled endpoints found")
	}
	paths := regexp.MustCompile(`'([^']+)'`).FindAllStringSubmatch(list[1], -1)
	h := newTestHandler(t, newFixture())
	for _, p := range paths {
		rel := p[1]
		res, body := get(t, h, "/"+rel)
		switch {
		case rel == "bridgez":
			// Without bridges the list is empty; the page says "No bridges configured."
			require.Equal(t, res.StatusCode, http.StatusOK, "/bridgez without bridges")
			if !strings.Contains(string(body), `"bridges": []`) {
				t.Errorf("/bridgez without bridges: %s, want an empty bridges list", body)
			}
		case res.StatusCode != http.StatusOK && !(strings.HasPrefix(rel, "healthz") && res.StatusCode == http.StatusServiceUnavailable):
			t.Errorf("the page polls /%s, which answers %d: %s", rel, res.StatusCode, body)
		}
	}
	if len(paths) < 6 {
		t.Errorf("the page polls only %v", paths)
	}
}

func TestEscapeHTML(t *testing.T) {
	for _, s := range []string{"", "plain", `<a href="x">'&'</a>`, "&&", "ü<ü>", `"`, "a'b"} {
		require.Equal(t, escapeHTML(s), html.EscapeString(s), s)
	}
}
