package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// authExample is the example file without a jetstream block.
var authExample = filepath.Join("..", "..", "..", "deploy", "examples", "auth.yaml")

// A file without a jetstream block runs JetStream as no file does; only
// an explicit false, disabled or enabled: false turns it off.
func TestJetStreamOnWithoutTheBlock(t *testing.T) {
	cases := []struct {
		name, src string
		on        bool
	}{
		{"empty file", "", true},
		{"comments only", "# nothing here\n", true},
		{"other keys", "port: 4333\n", true},
		{"null block", "jetstream:\n", true},
		{"empty mapping", "jetstream: {}\n", true},
		{"mapping without enabled", "jetstream: {domain: edge}\n", true},
		{"true", "jetstream: true\n", true},
		{"enabled string", "jetstream: enabled\n", true},
		{"false", "jetstream: false\n", false},
		{"disabled string", "jetstream: disabled\n", false},
		{"enabled false", "jetstream: {enabled: false}\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustValidate(t, tc.src)
			require.DeepEqual(t, c.JetStream.Enabled, tc.on)
			if tc.on {
				require.DeepEqual(t, c.JetStream.StoreDir, testEnv.DefaultStoreDir())
			} else {
				require.DeepEqual(t, c.JetStream.StoreDir, "")
			}
		})
	}
	t.Run("auth example", func(t *testing.T) {
		c, err := Load(authExample)
		require.NoError(t, err)
		c.SetDefaults(testEnv)
		require.NoError(t, c.Validate())
		require.DeepEqual(t, c.JetStream.Enabled, true)
		require.DeepEqual(t, c.JetStream.StoreDir, testEnv.DefaultStoreDir())
	})
	t.Run("store dir flag keeps it on", func(t *testing.T) {
		c := mustParse(t, "port: 4333\n")
		Overrides{StoreDir: ptr("/flag/js")}.Apply(c)
		c.SetDefaults(testEnv)
		require.DeepEqual(t, c.JetStream.Enabled, true)
		require.DeepEqual(t, c.JetStream.StoreDir, "/flag/js")
	})
	t.Run("flag turns it off", func(t *testing.T) {
		c := mustParse(t, "port: 4333\n")
		Overrides{JetStream: ptr(false)}.Apply(c)
		c.SetDefaults(testEnv)
		require.DeepEqual(t, c.JetStream.Enabled, false)
	})
}

func TestDefaultStorageLimits(t *testing.T) {
	const gib = 1 << 30
	disk := func(ds DiskSpace, err error) func(string) (DiskSpace, error) {
		return func(string) (DiskSpace, error) { return ds, err }
	}
	cases := []struct {
		name          string
		m             Machine
		reserve       int64
		mem, file     int64
		memNote, note string
	}{
		{"unknown machine", Machine{}, 0, fallbackMaxMemory, fallbackMaxFile, "unknown", "unknown"},
		{"memory share", Machine{Memory: 8 * gib}, 0, 6 * gib, fallbackMaxFile, "75% of 8GiB of memory", ""},
		{"gomemlimit lower", Machine{Memory: 8 * gib, MemoryLimit: 2 * gib}, 0, 3 * gib / 2, fallbackMaxFile, "GOMEMLIMIT", ""},
		{"gomemlimit higher", Machine{Memory: 8 * gib, MemoryLimit: 16 * gib}, 0, 6 * gib, fallbackMaxFile, "of memory", ""},
		{"available share", Machine{Disk: disk(DiskSpace{Size: 100 * gib, Avail: 40 * gib}, nil)}, 0,
			fallbackMaxMemory, 30 * gib, "", "75% of 40GiB available"},
		{"streams keep what they hold", Machine{Disk: disk(DiskSpace{Size: 100 * gib, Avail: 4 * gib, Used: 36 * gib}, nil)}, 0,
			fallbackMaxMemory, 30 * gib, "", "plus the 36GiB its streams hold"},
		{"at most a share of the size", Machine{Disk: disk(DiskSpace{Size: 8 * gib, Avail: 8 * gib, Used: 8 * gib}, nil)}, 0,
			fallbackMaxMemory, 6 * gib, "", "75% of the 8GiB file system"},
		{"reserve deducted", Machine{Disk: disk(DiskSpace{Size: 100 * gib, Avail: 40 * gib}, nil)}, 32 << 20,
			fallbackMaxMemory, 30*gib - 32<<20, "", "less the 32MiB the uplinks' min_free_disk keeps free"},
		{"reserve from the fallback", Machine{}, 1 * gib, fallbackMaxMemory, fallbackMaxFile - gib, "", "less the 1GiB"},
		{"no room", Machine{Disk: disk(DiskSpace{Size: gib, Avail: 16 << 20}, nil)}, 32 << 20,
			fallbackMaxMemory, minMaxFile, "", "no room left for streams"},
		{"unreadable", Machine{Disk: disk(DiskSpace{}, errors.New("boom"))}, 0, fallbackMaxMemory, fallbackMaxFile, "", "unknown (boom)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := defaultStorageLimits(tc.m, "/store/streams", tc.reserve)
			require.DeepEqual(t, l.maxMemory, tc.mem)
			require.DeepEqual(t, l.maxFile, tc.file)
			if !strings.Contains(l.memoryNote, tc.memNote) || !strings.Contains(l.fileNote, tc.note) {
				t.Fatalf("notes %q, %q; want %q, %q", l.memoryNote, l.fileNote, tc.memNote, tc.note)
			}
		})
	}
}

// The uplinks' reserve is the largest min_free_disk, each defaulting to
// DefaultMinFreeDisk; set limits are kept and said to be set.
func TestStorageDefaultsInTheConfig(t *testing.T) {
	env := testEnv
	env.Machine = Machine{Memory: 4 << 30, Disk: func(string) (DiskSpace, error) { return DiskSpace{Avail: 40 << 30}, nil }}
	c := mustParse(t, `
leafnodes: {remotes: [{url: nats://hub:7422}]}
uplinks:
  - {name: a, subjects: [a.>], hub_subject_prefix: s.}
  - {name: b, subjects: [b.>], hub_subject_prefix: s., min_free_disk: 1GiB}
`)
	c.SetDefaults(env)
	require.NoError(t, c.Validate())
	require.DeepEqual(t, c.JetStream.MaxMemoryStore, Size(3<<30))
	require.DeepEqual(t, c.JetStream.MaxFileStore, Size(30<<30-1<<30))
	summary := strings.Join(c.StorageSummary(), "\n")
	for _, want := range []string{
		"jetstream on: streams in /home/test/.local/state/leafbox/streams",
		"uplink outboxes in /home/test/.local/state/leafbox/outbox",
		"max_memory_store 3GiB: default, 75% of 4GiB of memory",
		"max_file_store 29GiB: default, 75% of 40GiB available on the file system of /home/test/.local/state/leafbox/streams, less the 1GiB the uplinks' min_free_disk keeps free",
	} {
		if !strings.Contains(summary, want) {
			t.Fatalf("summary lacks %q:\n%s", want, summary)
		}
	}

	set := mustParse(t, "jetstream: {max_memory_store: 64MiB, max_file_store: 2GiB}\n")
	set.SetDefaults(env)
	require.DeepEqual(t, set.JetStream.MaxMemoryStore, Size(64<<20))
	require.DeepEqual(t, set.JetStream.MaxFileStore, Size(2<<30))
	require.ErrorContains(t, errors.New(strings.Join(set.StorageSummary(), "\n")), "max_memory_store 64MiB: set", "max_file_store 2GiB: set")
}
