//go:build unix

package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// A headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: commands go in on fd 3, replies and events
// come out on fd 4, each a JSON object ended by a NUL byte), so that the
// test needs neither a websocket library nor a debugging port.

// chromiumPath is Debian's chromium (scripts/test installs it).
const chromiumPath = "/usr/bin/chromium"

// browser is one headless Chromium with one page attached.
type browser struct {
	t        *testing.T
	cmd      *exec.Cmd
	toChrome io.WriteCloser
	session  string // the page's flat session id

	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMessage
	errs    []string // page exceptions and console errors, for the test to check
	stderr  syncBuffer
	done    chan struct{} // closed when the reader stops
}

// cdpMessage is a reply (ID set) or an event (Method set).
type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts Chromium with a blank page of width×height CSS
// pixels; it is stopped in t.Cleanup.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s: %v (scripts/test installs Debian's chromium package)", chromiumPath, err)
	}
	toR, toW, err := os.Pipe()
	require.NoError(t, err)
	fromR, fromW, err := os.Pipe()
	require.NoError(t, err)
	b := &browser{t: t, toChrome: toW, pending: make(map[int]chan cdpMessage), done: make(chan struct{})}
	b.cmd = exec.Command(chromiumPath,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--mute-audio", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	b.cmd.ExtraFiles = []*os.File{toR, fromW} // fd 3 and fd 4
	b.cmd.Stderr = &b.stderr
	require.NoError(t, b.cmd.Start())
	toR.Close()
	fromW.Close()
	go b.read(fromR)
	t.Cleanup(func() {
		_ = b.toChrome.Close() // Chromium exits when its pipe closes
		exited := make(chan struct{})
		go func() { _ = b.cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = b.cmd.Process.Kill()
			<-exited
		}
		<-b.done
	})

	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.call(b.session, "Runtime.enable", nil, nil)
	b.call(b.session, "Log.enable", nil, nil)
	b.call(b.session, "Page.enable", nil, nil)
	return b
}

// read dispatches replies to their callers and records page errors.
func (b *browser) read(r io.ReadCloser) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(line[:len(line)-1], &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				ch <- m
				delete(b.pending, m.ID)
			}
		} else {
			b.recordEvent(m)
		}
		b.mu.Unlock()
	}
}

// recordEvent keeps script exceptions and console or CSP errors; network
// errors (the 404 of an endpoint the server does not have) are expected.
// b.mu is held.
func (b *browser) recordEvent(m cdpMessage) {
	switch m.Method {
	case "Runtime.exceptionThrown":
		b.errs = append(b.errs, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var e struct {
			Entry struct {
				Level, Source, Text, URL string
			} `json:"entry"`
		}
		if json.Unmarshal(m.Params, &e) == nil && e.Entry.Level == "error" && e.Entry.Source != "network" {
			b.errs = append(b.errs, fmt.Sprintf("%s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string          `json:"type"`
			Args json.RawMessage `json:"args"`
		}
		if json.Unmarshal(m.Params, &e) == nil && (e.Type == "error" || e.Type == "assert") {
			b.errs = append(b.errs, "console."+e.Type+": "+string(e.Args))
		}
	}
}

// pageErrors returns the errors the page reported so far.
func (b *browser) pageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// call sends method with params in session ("" for the browser) and
// decodes the result into out (when not nil); a protocol error fails the
// test.
func (b *browser) call(session, method string, params, out any) {
	b.t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		b.t.Fatalf("%s: %v; chromium stderr:\n%s", method, err, b.stderr.String())
	}
}

func (b *browser) try(session, method string, params, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.toChrome.Write(append(data, 0)); err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return errors.New("chromium closed the pipe")
		}
		if m.Error != nil {
			return fmt.Errorf("%d %s", m.Error.Code, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-time.After(waitTimeout):
		return fmt.Errorf("no reply within %v", waitTimeout)
	}
}

// viewport sets the page's size in CSS pixels; mobile also emulates a
// phone's viewport handling.
func (b *browser) viewport(width, height int, mobile bool) {
	b.t.Helper()
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile,
	}, nil)
}

// navigate loads url and waits for its load event.
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
	b.waitFor("the page to load", `document.readyState === "complete" ? "ok" : ""`, "ok")
}

// eval evaluates expression in the page and returns its value as a
// string ("" for null or undefined).
func (b *browser) eval(expression string) string {
	b.t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %s: %s", expression, r.ExceptionDetails.Text)
	}
	if r.Result.Value == nil {
		return ""
	}
	return fmt.Sprint(r.Result.Value)
}

// waitFor polls expression until it evaluates to want, failing with the
// last value and the page's text at waitTimeout.
func (b *browser) waitFor(what, expression, want string) {
	b.t.Helper()
	b.waitUntil(what, expression, func(got string) bool { return got == want })
}

// waitUntil polls expression until ok accepts its value.
func (b *browser) waitUntil(what, expression string, ok func(string) bool) string {
	b.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		got := b.eval(expression)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: %s is %q after %v; page text:\n%s", what, expression, got, waitTimeout,
				b.eval(`document.body ? document.body.innerText : ""`))
		}
		<-tick.C
	}
}

// screenshot saves the whole page as a PNG file in dir and, when
// LEAFBOX_SCREENSHOTS names a directory, a copy there; it returns the path.
func (b *browser) screenshot(dir, name string) string {
	b.t.Helper()
	var metrics struct {
		Content struct {
			Width, Height float64
		} `json:"cssContentSize"`
	}
	b.call(b.session, "Page.getLayoutMetrics", nil, &metrics)
	var shot struct {
		Data string `json:"data"`
	}
	b.call(b.session, "Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": metrics.Content.Width, "height": metrics.Content.Height, "scale": 1},
	}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(b.t, err)
	path := filepath.Join(dir, name)
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	if extra := strings.TrimSpace(os.Getenv("LEAFBOX_SCREENSHOTS")); extra != "" {
		require.NoError(b.t, os.WriteFile(filepath.Join(extra, name), png, 0o644))
	}
	return path
}

// requireNoSidewaysScroll fails the test when the page is wider than the
// viewport (a phone would scroll sideways), naming what sticks out.
func (b *browser) requireNoSidewaysScroll() {
	b.t.Helper()
	wide := b.eval(`(function(){
		const w = document.documentElement.clientWidth, out = [];
		if (document.documentElement.scrollWidth <= w) return "";
		for (const e of document.querySelectorAll("body *")) {
			const r = e.getBoundingClientRect();
			if (r.right > w + 1) out.push(e.tagName + (e.id ? "#" + e.id : "") + "." + e.className + " " + Math.round(r.right));
		}
		return "page " + document.documentElement.scrollWidth + "px: " + out.slice(0, 8).join(", ");
	})()`)
	if wide != "" {
		b.t.Errorf("wider than the viewport: %s", wide)
	}
}
