// Package monhttp is the small HTTP/1.1 client the command line uses to
// ask a leafbox's monitoring endpoint (its own, on a known address): one
// request per connection, no proxies, redirects, cookies or HTTP/2.
//
// It exists for the binary's size: net/http's Client and Transport bring
// the HTTP/2 client, proxy support and IDNA host names (x/net/idna with
// x/text's Unicode tables), about 200 KB of an ARM binary, none of which
// a request to a monitoring port needs. The request is written by hand
// and the answer read with http.ReadResponse, which the server shares.
package monhttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Do sends req on a new connection and returns the answer. The whole
// exchange, the body read included, ends within timeout or when req's
// context ends; closing the answer's body closes the connection. Only
// http and https URLs are accepted.
func Do(req *http.Request, timeout time.Duration) (*http.Response, error) {
	u := req.URL
	port := "80"
	var tlsConf *tls.Config
	switch u.Scheme {
	case "http":
	case "https":
		port = "443"
		tlsConf = &tls.Config{ServerName: u.Hostname()}
	default:
		return nil, fmt.Errorf("%s %s: unsupported protocol scheme %q", req.Method, u, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%s %s: no host in the URL", req.Method, u)
	}
	if p := u.Port(); p != "" {
		port = p
	}
	addr := net.JoinHostPort(u.Hostname(), port)

	var msg bytes.Buffer
	msg.WriteString(req.Method + " " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUser-Agent: leafbox\r\nConnection: close\r\n")
	for k, vs := range req.Header {
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n") {
				return nil, fmt.Errorf("%s %s: header %s has a line break", req.Method, u, k)
			}
			msg.WriteString(k + ": " + v + "\r\n")
		}
	}
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s %s: reading the request body: %w", req.Method, u, err)
		}
	}
	if body != nil || req.Method == http.MethodPost || req.Method == http.MethodPut {
		msg.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	msg.WriteString("\r\n")
	msg.Write(body)

	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	fail := func(err error) (*http.Response, error) {
		cancel()
		if ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)) {
			err = fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, u, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fail(err)
	}
	if tlsConf != nil {
		tc := tls.Client(conn, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return fail(err)
		}
		conn = tc
	}
	// The context's end cuts a read or write under way.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	done := func() {
		stop()
		cancel()
		conn.Close()
	}
	if _, err := conn.Write(msg.Bytes()); err != nil {
		done()
		return fail(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		done()
		return fail(err)
	}
	resp.Body = &connBody{ReadCloser: resp.Body, done: done}
	return resp, nil
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connBody closes the connection with the answer's body.
type connBody struct {
	io.ReadCloser
	done func()
}

// Close closes the body and the connection.
func (b *connBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}
