package app

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Ports lists the URLs leafbox can be reached at. It is written as JSON to
// the ports file, in the shape of nats-server's ports file, so tools that
// read one read the other:
//
//	{"nats":["nats://127.0.0.1:4222"],"monitoring":["http://127.0.0.1:8222"]}
type Ports struct {
	// Nats are the client URLs (scheme tls when TLS is required).
	Nats []string `json:"nats,omitempty"`
	// Monitoring are the monitoring URLs.
	Monitoring []string `json:"monitoring,omitempty"`
	// LeafNodes are the leafnode listener's URLs (leafnodes.listen).
	LeafNodes []string `json:"leafnodes,omitempty"`
	// MQTT are the MQTT listener's URLs (mqtt.listen).
	MQTT []string `json:"mqtt,omitempty"`
}

// PortsFileName returns the ports file's name for process pid, as
// nats-server names its own: <program>_<pid>.ports.
func PortsFileName(pid int) string {
	return "leafbox_" + strconv.Itoa(pid) + ".ports"
}

// WritePortsFile writes p as JSON to dir/PortsFileName(pid) and returns the
// file's path. The file appears atomically (written aside, then renamed),
// so a reader polling for it never sees partial JSON.
func WritePortsFile(dir string, pid int, p Ports) (string, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, PortsFileName(pid))
	tmp, err := os.CreateTemp(dir, ".leafbox-ports-*")
	if err != nil {
		return "", fmt.Errorf("ports file: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("ports file: %w", werr)
	}
	return path, nil
}

// URLs returns scheme://host:port for the address a listener is bound to.
// An unspecified address (0.0.0.0 or ::) is expanded to every interface
// address, loopback first, as nats-server does.
func URLs(scheme string, addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{scheme + "://" + addr.String()}
	}
	port := strconv.Itoa(tcp.Port)
	if !tcp.IP.IsUnspecified() {
		return []string{scheme + "://" + net.JoinHostPort(tcp.IP.String(), port)}
	}
	ips := interfaceIPs(tcp.IP.To4() != nil)
	if len(ips) == 0 {
		ips = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	urls := make([]string, 0, len(ips))
	for _, ip := range ips {
		urls = append(urls, scheme+"://"+net.JoinHostPort(ip.String(), port))
	}
	return urls
}

// interfaceIPs lists the machine's addresses, loopback first and IPv4
// before IPv6; ipv4Only leaves out IPv6 addresses (for a listener bound to
// 0.0.0.0 alone). Link-local addresses are left out.
func interfaceIPs(ipv4Only bool) []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || (ipv4Only && ipnet.IP.To4() == nil) || ipnet.IP.IsLinkLocalUnicast() {
			continue
		}
		ips = append(ips, ipnet.IP)
	}
	rank := func(ip net.IP) int {
		r := 0
		if !ip.IsLoopback() {
			r += 2
		}
		if ip.To4() == nil {
			r++
		}
		return r
	}
	slices.SortStableFunc(ips, func(a, b net.IP) int { return cmp.Compare(rank(a), rank(b)) })
	return ips
}
