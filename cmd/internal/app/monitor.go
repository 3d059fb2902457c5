package app

import (
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
)

// startMonitor serves the monitoring endpoints (/varz, /connz, /healthz,
// /metrics, ...) for srv on addr ("host:port"; port 0 picks a free one).
func startMonitor(addr string, srv *server.Server) (*monitor.HTTPServer, error) {
	return monitor.Listen(addr, monitor.NewHandler(srv))
}
