package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// resolveTimeout bounds the name lookup of one listen host.
const resolveTimeout = 3 * time.Second

// Preflight checks c against this machine, changing nothing: every listen
// host is an address of this machine (or 0.0.0.0 or ::) or a name that
// resolves, and the store directory, and the outboxes' directory, is a
// writable directory or can be created, and no file holding a secret
// (credentials, NKey seeds, TLS keys, password files, the identity) is
// readable by others. It finds what `leafbox run` would
// otherwise fail on later with a less direct error. Call it after
// Validate; config check and Build do. Problems come as a *Error.
func (c *Config) Preflight() error {
	var problems []*FieldError
	bad := func(path string, err error) { problems = append(problems, c.fieldErr(path, err)) }

	hosts := []struct{ path, host string }{{"listen", c.Listen.Host}, {"http", c.HTTP.Host}}
	if ln := c.LeafNodes; ln != nil && !ln.Listen.IsZero() {
		host := ln.Listen.Host
		if host == "" {
			host = DefaultLeafHost
		}
		hosts = append(hosts, struct{ path, host string }{"leafnodes.listen", host})
	}
	if c.MonitorPort() == 0 {
		hosts = append(hosts[:1], hosts[2:]...) // monitoring is off
	}
	checked := map[string]error{}
	for _, h := range hosts {
		err, seen := checked[h.host]
		if !seen {
			err = checkListenHost(h.host)
			checked[h.host] = err
		}
		if err != nil {
			bad(h.path, err)
		}
	}

	storeDir := ""
	if js := c.JetStream; js != nil && js.Enabled && js.StoreDir != "" {
		storeDir = js.StoreDir
		if err := checkStoreDir(storeDir); err != nil {
			bad("jetstream.store_dir", err)
		}
	}
	if len(c.Uplinks) > 0 && c.stateDir != "" && c.stateDir != storeDir {
		if err := checkStoreDir(c.stateDir); err != nil {
			bad("uplinks", fmt.Errorf("outbox directory: %w", err))
		}
	}
	problems = append(problems, c.checkSecretModes()...)
	err := newError(problems)
	if ce, ok := err.(*Error); ok {
		ce.File = c.file
	}
	return err
}

// checkListenHost reports why a listener could not bind host: an IP
// address that is not one of this machine's, or a name that does not
// resolve. It binds nothing.
func checkListenHost(host string) error {
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsUnspecified() || isLocalIP(ip) {
			return nil
		}
		return fmt.Errorf("%s is not an address of this machine", host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			err = errors.New(dnsErr.Err)
		}
		return fmt.Errorf("host %q does not resolve: %v", host, err)
	}
	return nil
}

// isLocalIP reports whether ip is an address of one of this machine's
// interfaces (any address of a loopback network counts).
func isLocalIP(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: let the bind decide
	}
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ipnet.IP.Equal(ip) || (ipnet.IP.IsLoopback() && ipnet.Contains(ip)) {
			return true
		}
	}
	return false
}

// checkStoreDir reports why dir cannot hold the store: it, or the
// ancestor it would be created under, is not a directory or is not
// writable. It creates nothing.
func checkStoreDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case err == nil && !info.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case err == nil:
		if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
			return fmt.Errorf("%s is not writable: %v", dir, err)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s: %v", dir, unwrapPathError(err))
	}
	// Missing: it is created under its nearest existing ancestor.
	parent := filepath.Dir(dir)
	for {
		info, err := os.Stat(parent)
		if err == nil {
			if !info.IsDir() {
				return fmt.Errorf("%s cannot be created: %s is not a directory", dir, parent)
			}
			if err := unix.Access(parent, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("%s cannot be created: %s is not writable: %v", dir, parent, err)
			}
			return nil
		}
		if up := filepath.Dir(parent); up != parent {
			parent = up
			continue
		}
		return fmt.Errorf("%s: %v", dir, unwrapPathError(err))
	}
}

// unwrapPathError drops the operation and path of a *fs.PathError, which
// the message names already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
