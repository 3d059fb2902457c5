package config

import (
	"crypto/tls"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestServerOptionsLeafTLSIsClientSide(t *testing.T) {
	dir := t.TempDir()
	cert, _ := writeCert(t, dir)
	c := mustValidate(t, "leafnodes:\n  remotes:\n    - url: tls://hub:7422\n      tls: {ca_file: "+cert+"}\n")
	tc, problems := c.buildTLS("leafnodes.remotes[0].tls", c.LeafNodes.Remotes[0].TLS.tlsConfig(), false)
	require.DeepEqual(t, len(problems), 0)
	if tc.RootCAs == nil || tc.ClientAuth != tls.NoClientCert {
		t.Fatalf("want RootCAs and no client auth, got %+v", tc)
	}
}
