package monitor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Timeouts of the monitoring HTTP server. Responses are small and local,
// so slow clients are cut off rather than waited for.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 60 * time.Second
)

// HTTPServer serves a handler on one listener. Create it with Listen.
type HTTPServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{} // closed when Serve has returned
	err  error         // Serve's error other than http.ErrServerClosed; read after done
}

// Listen binds exactly addr ("host:port"; port 0 picks a free port) over
// TCP and serves h on it in a background goroutine until Shutdown.
func Listen(addr string, h http.Handler) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &HTTPServer{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       idleTimeout,
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// Addr returns the address the server is bound to, with the actual port
// when Listen was given port 0.
func (s *HTTPServer) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops accepting connections, waits for in-flight requests to
// finish and then for the serving goroutine to return. If ctx ends first it
// closes the remaining connections and returns ctx's error. Otherwise it
// returns the error that stopped serving early, if any.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	if err == nil {
		err = s.err
	}
	return err
}
