// Command fakeleafbox is a deliberately broken leafbox for the upgrade
// tests: `version` answers like leafbox, `run` fails as mode says.
//
//	-ldflags "-X main.mode=exit"  run exits with status 3 at once
//	-ldflags "-X main.mode=hang"  run serves /varz, a /healthz that always
//	                              answers 503, and its ports file, until SIGTERM
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var mode = "exit"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Printf("leafbox v0.0.0-fake-%s\n", mode)
		return
	}
	fmt.Fprintf(os.Stderr, "fakeleafbox %s: %s\n", mode, strings.Join(os.Args[1:], " "))
	if mode == "exit" {
		os.Exit(3)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(4)
	}
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/varz", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"start": start, "leafbox_version": "v0.0.0-fake-hang"})
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"unavailable","error":"fake: never healthy"}`))
	})
	go func() { _ = http.Serve(ln, mux) }()
	var portsPath string
	for i, a := range os.Args {
		if a == "--ports-file-dir" && i+1 < len(os.Args) {
			portsPath = filepath.Join(os.Args[i+1], fmt.Sprintf("leafbox_%d.ports", os.Getpid()))
			data, _ := json.Marshal(map[string][]string{"monitoring": {"http://" + ln.Addr().String()}})
			_ = os.WriteFile(portsPath, data, 0o644)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	if portsPath != "" {
		_ = os.Remove(portsPath)
	}
}
