package app

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// The free-space check itself is leaf/node's TestDiskLow.
func TestValidateMinFreeDisk(t *testing.T) {
	err := validateErr(t, "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"+
		"uplinks: [{name: a, subjects: [a.>], hub_subject_prefix: s., min_free_disk: -1}]\n")
	require.ErrorContains(t, err, "uplinks[0].min_free_disk: must not be negative")
}
