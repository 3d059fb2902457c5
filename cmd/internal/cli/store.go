package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/app"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/storedir"
	"github.com/leafbox/leafbox/store/vfs"
)

// exitDamaged is the exit status of `leafbox store verify` when it finds
// damage (1 is for a check that could not run).
const exitDamaged = 2

func newStoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Check or describe the store directory of a stopped gateway",
		Long: "store works on the store directory (jetstream.store_dir) of a gateway that is\n" +
			"not running: it takes the directory's lock, so it refuses a store a running\n" +
			"leafbox holds, and no leafbox starts on it meanwhile. It only reads.",
	}
	cmd.AddCommand(newStoreVerifyCmd(), newStoreInspectCmd())
	return cmd
}

func newStoreVerifyCmd() *cobra.Command {
	var kf storeKeyFlags
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check every record, index and consumer file of a store directory",
		Long: "verify reads every block, index file and consumer log of the store directory\n" +
			"DIR (its streams, outboxes and dead letters) with the checks leafbox runs when\n" +
			"it opens them, and every JSON file it keeps, without repairing anything. It\n" +
			"prints a line per stream, consumer and store, then each problem: DAMAGE for\n" +
			"data that fails its checksums or is lost, warning for what the next start\n" +
			"repairs without loss (a stale index, a leftover temporary file).\n\n" +
			"An encrypted store (jetstream.cipher) is checked with its key, given as the\n" +
			"server takes it: --key-file FILE, --config FILE (the gateway's configuration:\n" +
			"its jetstream key, key_file or $LEAFBOX_JS_KEY, and prev_key) or\n" +
			"$LEAFBOX_JS_KEY. Every sealed record, index file and consumer log is then\n" +
			"authenticated and decrypted; nothing is re-sealed. A key that opens none of\n" +
			"the store's key files is an error, not damage.\n\n" +
			"Exit status: 0 when nothing is damaged, 2 when something is, 1 when the\n" +
			"check could not run (DIR missing, held by a running leafbox, unreadable,\n" +
			"encrypted and no key or the wrong key given).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			enc, err := kf.encryption()
			if err != nil {
				return err
			}
			sc, err := scanStoreDir(args[0], enc)
			if err != nil {
				return err
			}
			sc.printVerify(cmd.OutOrStdout())
			if sc.damaged() {
				return &exitError{code: exitDamaged}
			}
			return nil
		},
	}
	kf.register(cmd)
	return cmd
}

func newStoreInspectCmd() *cobra.Command {
	var kf storeKeyFlags
	cmd := &cobra.Command{
		Use:   "inspect DIR",
		Short: "List the streams, sizes, sequences and consumers of a store directory",
		Long: "inspect prints what the store directory DIR of a stopped gateway holds: per\n" +
			"stream its storage, message count, bytes, first and last sequences, subjects,\n" +
			"size on disk and consumers (with their delivered, ack floor and pending\n" +
			"counts), then the outbox and dead-letter stores. Counts are what the files\n" +
			"hold; limits and max_age apply when leafbox opens them. Problems are counted\n" +
			"at the end; `leafbox store verify` lists them. An encrypted store takes its\n" +
			"key as verify does (--key-file, --config or $LEAFBOX_JS_KEY).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			enc, err := kf.encryption()
			if err != nil {
				return err
			}
			sc, err := scanStoreDir(args[0], enc)
			if err != nil {
				return err
			}
			return sc.printInspect(cmd.OutOrStdout())
		},
	}
	kf.register(cmd)
	return cmd
}

// storeKeyFlags are how store verify and inspect take the key of an
// encrypted store.
type storeKeyFlags struct {
	keyFile string
	config  string
}

func (f *storeKeyFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.keyFile, "key-file", "", "the store's encryption key, read from FILE as jetstream.key_file is (default $"+config.KeyEnv+")")
	fs.StringVarP(&f.config, "config", "c", "", "take the key (and prev_key) from the jetstream block of this leafbox configuration file")
}

// encryption resolves the key the flags give, reading the files they
// name, through the code leafbox run uses: a configuration's jetstream
// block (cipher, key, key_file, $LEAFBOX_JS_KEY, prev_key), or a key
// file, or $LEAFBOX_JS_KEY. Without a cipher (all but --config), each
// directory's key file names its own.
func (f *storeKeyFlags) encryption() (filestore.Encryption, error) {
	env := config.OSEnv()
	switch {
	case f.keyFile != "" && f.config != "":
		return filestore.Encryption{}, errors.New("--key-file and --config both give a key: give it one way")
	case f.config != "":
		cfg, err := config.Load(f.config)
		if err != nil {
			return filestore.Encryption{}, err
		}
		// Only the jetstream block matters here: the rest (certificates,
		// listen addresses) need not hold on the machine verify runs on.
		cfg.SetDefaults(env)
		enc, err := app.StoreEncryption(cfg)
		if err != nil {
			return filestore.Encryption{}, fmt.Errorf("%s: jetstream: %w", f.config, err)
		}
		return enc, nil
	}
	key, err := config.KeyFrom(f.keyFile, env)
	if err != nil {
		flag := "$" + config.KeyEnv
		if f.keyFile != "" {
			flag = "--key-file"
		}
		return filestore.Encryption{}, fmt.Errorf("%s: %w", flag, err)
	}
	return filestore.Encryption{Key: key}, nil
}

// storeScan is everything scanStoreDir read.
type storeScan struct {
	root string
	enc  filestore.Encryption
	// opened counts the encrypted directories the key opened;
	// wrongKey lists those whose key file it did not.
	opened   int
	wrongKey []error
	streams  []*streamScan
	// stores are the filestore streams outside streams/ (outboxes, dead
	// letters), by path relative to root.
	stores []*otherStore
	// consumers are consumer logs outside a stream's obs directory.
	consumers []*consumerScan
	jsonFiles int
	problems  []filestore.Problem
}

// streamScan is one JetStream stream directory.
type streamScan struct {
	name      string
	internal  bool
	meta      *streamMetaFile
	msgs      *filestore.VerifyReport
	consumers []*consumerScan
}

// otherStore is a filestore stream outside streams/.
type otherStore struct {
	rel    string
	report *filestore.VerifyReport
}

// consumerScan is one consumer directory.
type consumerScan struct {
	name   string
	meta   *consumerMetaFile
	report *filestore.ConsumerVerifyReport
}

// streamMetaFile is the part of a stream's meta.json (store/jetstream)
// the store commands show.
type streamMetaFile struct {
	Config struct {
		Name     string   `json:"name"`
		Subjects []string `json:"subjects"`
		Storage  string   `json:"storage"`
	} `json:"config"`
}

// consumerMetaFile is the part of a consumer's meta.json they show.
type consumerMetaFile struct {
	Stream string `json:"stream_name"`
	Name   string `json:"name"`
	Config struct {
		AckPolicy string `json:"ack_policy"`
	} `json:"config"`
}

// scanStoreDir holds root's lock and reads all of it, opening encrypted
// directories with enc.
func scanStoreDir(root string, enc filestore.Encryption) (*storeScan, error) {
	release, err := storedir.Hold(root)
	if err != nil {
		var inUse *storedir.InUseError
		if errors.As(err, &inUse) {
			return nil, fmt.Errorf("%w: stop it first (store verify and inspect read a stopped gateway's store)", err)
		}
		return nil, err
	}
	defer release()
	sc := &storeScan{root: filepath.Clean(root), enc: enc}
	layout := storedir.At(sc.root)
	err = sc.scanStreams(layout.Streams())
	if err == nil {
		err = sc.scanRest(layout.Streams())
	}
	if errors.Is(err, filestore.ErrEncryptedVerify) {
		return nil, fmt.Errorf("%w: give the store's key with --key-file FILE, --config FILE (the gateway's configuration) or $%s", err, config.KeyEnv)
	}
	if err != nil {
		return nil, err
	}
	if len(sc.wrongKey) > 0 && sc.opened == 0 {
		// The key opens nothing: it is not this store's, and what it
		// would show is no report at all.
		others := ""
		if n := len(sc.wrongKey) - 1; n > 0 {
			others = fmt.Sprintf(" (nor the store's %s)", plural(n, "other key file"))
		}
		return nil, fmt.Errorf("%w%s: the key given is not this store's", sc.wrongKey[0], others)
	}
	return sc, nil
}

// keyResult accounts for a verify of an encrypted directory: it counts a
// report whose key file opened, and turns ErrWrongKey into damage of the
// key file (reported so only if the key opens some other directory,
// which scanStoreDir checks at the end). Other errors are returned.
func (sc *storeScan) keyResult(dir, keyName string, cipher filestore.Cipher, err error) (filestore.Problem, error) {
	switch {
	case err == nil:
		if cipher != filestore.CipherNone {
			sc.opened++
		}
		return filestore.Problem{}, nil
	case !errors.Is(err, filestore.ErrWrongKey):
		return filestore.Problem{}, err
	}
	sc.wrongKey = append(sc.wrongKey, err)
	p := filestore.Problem{File: filepath.Join(dir, keyName), Damage: true,
		What: "the key that opens the store's other encrypted directories does not open it: the file is damaged, or was sealed with another key (give that one as jetstream.prev_key); nothing under it was checked"}
	sc.problems = append(sc.problems, p)
	return p, nil
}

// verifyStream verifies the filestore stream in dir.
func (sc *storeScan) verifyStream(dir string) (*filestore.VerifyReport, error) {
	r, err := filestore.VerifyWithKey(vfs.OS, dir, sc.enc)
	var cipher filestore.Cipher
	if r != nil {
		cipher = r.Cipher
	}
	p, err := sc.keyResult(dir, "stream.key", cipher, err)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return &filestore.VerifyReport{Dir: dir, Problems: []filestore.Problem{p}}, nil
	}
	sc.problems = append(sc.problems, r.Problems...)
	return r, nil
}

// scanStreams reads every stream directory under dir.
func (sc *storeScan) scanStreams(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ent := range ents {
		path := filepath.Join(dir, ent.Name())
		if !ent.IsDir() {
			sc.warn(path, "not a stream directory")
			continue
		}
		if strings.HasPrefix(ent.Name(), ".restore-") {
			sc.warn(path, "left by a stream restore that did not finish (safe to delete; the next restore of the stream replaces it)")
			continue
		}
		st := &streamScan{name: ent.Name()}
		sc.streams = append(sc.streams, st)
		var meta streamMetaFile
		metaPath := filepath.Join(path, "meta.json")
		if _, err := os.Stat(metaPath); errors.Is(err, fs.ErrNotExist) {
			// An internal stream (MQTT state; its name has a '.') has
			// no meta.json; another directory without one is ignored.
			st.internal = strings.Contains(ent.Name(), ".")
			if !st.internal {
				sc.warn(path, "no meta.json: leafbox ignores this directory")
			}
		} else if sc.readJSON(metaPath, &meta) {
			st.meta = &meta
			if meta.Config.Name != ent.Name() {
				sc.damage(filepath.Join(path, "meta.json"), fmt.Sprintf("names stream %q, not %q (leafbox skips the stream)", meta.Config.Name, ent.Name()))
			}
		}
		if msgs := filepath.Join(path, "msgs"); isDir(msgs) {
			r, err := sc.verifyStream(msgs)
			if err != nil {
				return err
			}
			st.msgs = r
		} else if st.meta != nil && st.meta.Config.Storage == "file" {
			sc.damage(path, "file stream without its msgs directory")
		}
		obs := filepath.Join(path, "obs")
		cents, err := os.ReadDir(obs)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, cent := range cents {
			cdir := filepath.Join(obs, cent.Name())
			if !cent.IsDir() {
				sc.warn(cdir, "not a consumer directory")
				continue
			}
			cs, err := sc.scanConsumer(cdir)
			if err != nil {
				return err
			}
			var cm consumerMetaFile
			if sc.readJSON(filepath.Join(cdir, "meta.json"), &cm) {
				cs.meta = &cm
				if cm.Name != cent.Name() || cm.Stream != ent.Name() {
					sc.damage(filepath.Join(cdir, "meta.json"), fmt.Sprintf("names consumer %q of stream %q", cm.Name, cm.Stream))
				}
			}
			st.consumers = append(st.consumers, cs)
		}
	}
	return nil
}

// scanConsumer checks one consumer log directory.
func (sc *storeScan) scanConsumer(dir string) (*consumerScan, error) {
	r, err := filestore.VerifyConsumerWithKey(vfs.OS, dir, sc.enc)
	var cipher filestore.Cipher
	if r != nil {
		cipher = r.Cipher
	}
	p, err := sc.keyResult(dir, "consumer.key", cipher, err)
	if err != nil {
		return nil, err
	}
	if r == nil {
		r = &filestore.ConsumerVerifyReport{Dir: dir, Problems: []filestore.Problem{p}}
	} else {
		sc.problems = append(sc.problems, r.Problems...)
	}
	return &consumerScan{name: filepath.Base(dir), report: r}, nil
}

// scanRest walks everything outside the streams directory: filestore
// streams (the outboxes and dead letters), consumer logs and JSON files.
func (sc *storeScan) scanRest(streams string) error {
	return filepath.WalkDir(sc.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == streams {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(sc.root, path)
		if !d.IsDir() {
			if strings.HasSuffix(path, ".json") {
				var v any
				sc.readJSON(path, &v)
			}
			return nil
		}
		ents, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, ent := range ents {
			name := ent.Name()
			switch {
			case !ent.IsDir() && (strings.HasSuffix(name, ".blk") || strings.HasSuffix(name, ".idx")):
				r, err := sc.verifyStream(path)
				if err != nil {
					return err
				}
				sc.stores = append(sc.stores, &otherStore{rel: rel, report: r})
				return filepath.SkipDir
			case !ent.IsDir() && name == "consumer.log":
				cs, err := sc.scanConsumer(path)
				if err != nil {
					return err
				}
				cs.name = rel
				sc.consumers = append(sc.consumers, cs)
			}
		}
		return nil
	})
}

// readJSON decodes a JSON file into v, recording a problem when it cannot.
func (sc *storeScan) readJSON(path string, v any) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		sc.damage(path, fmt.Sprintf("unreadable: %v", err))
		return false
	}
	sc.jsonFiles++
	if err := json.Unmarshal(b, v); err != nil {
		sc.damage(path, fmt.Sprintf("not valid JSON: %v", err))
		return false
	}
	return true
}

func (sc *storeScan) damage(path, what string) {
	sc.problems = append(sc.problems, filestore.Problem{File: path, Damage: true, What: what})
}

func (sc *storeScan) warn(path, what string) {
	sc.problems = append(sc.problems, filestore.Problem{File: path, What: what})
}

// damaged reports whether anything is damaged.
func (sc *storeScan) damaged() bool {
	for _, p := range sc.problems {
		if p.Damage {
			return true
		}
	}
	return false
}

// counts returns the number of damaged files and of warnings.
func (sc *storeScan) counts() (damaged, warnings int) {
	files := map[string]bool{}
	for _, p := range sc.problems {
		if p.Damage {
			files[p.File] = true
		} else {
			warnings++
		}
	}
	return len(files), warnings
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// storeLine describes a filestore stream's report in one line.
func storeLine(r *filestore.VerifyReport) string {
	seqs := "empty"
	if r.Msgs > 0 {
		seqs = fmt.Sprintf("seq %d..%d", r.FirstSeq, r.LastSeq)
	} else if r.LastSeq > 0 {
		seqs = fmt.Sprintf("empty at seq %d", r.LastSeq)
	}
	return fmt.Sprintf("%s (%s), %s, %s, %s, %s on disk%s",
		plural(int(r.Msgs), "message"), formatBytes(r.Bytes), seqs, plural(r.Blocks, "block"), plural(r.Indexes, "index file"), formatBytes(uint64(r.FileBytes)), sealedWith(r.Cipher))
}

// verdict is "ok" or what is wrong.
func verdict(ps []filestore.Problem) string {
	d, w := 0, 0
	for _, p := range ps {
		if p.Damage {
			d++
		} else {
			w++
		}
	}
	switch {
	case d > 0:
		return fmt.Sprintf("DAMAGED (%s)", plural(d+w, "problem"))
	case w > 0:
		return "ok, " + plural(w, "warning")
	}
	return "ok"
}

// printVerify writes verify's report.
func (sc *storeScan) printVerify(w io.Writer) {
	fmt.Fprintf(w, "store %s\n", sc.root)
	nConsumers := len(sc.consumers)
	for _, st := range sc.streams {
		var ps []filestore.Problem
		line := "no msgs directory"
		if st.msgs != nil {
			ps, line = st.msgs.Problems, storeLine(st.msgs)
		}
		fmt.Fprintf(w, "stream %s: %s: %s\n", st.name, line, verdict(ps))
		for _, c := range st.consumers {
			nConsumers++
			fmt.Fprintf(w, "  consumer %s: %s\n", c.name, consumerLine(c.report))
		}
	}
	for _, o := range sc.stores {
		fmt.Fprintf(w, "store %s: %s: %s\n", o.rel, storeLine(o.report), verdict(o.report.Problems))
	}
	for _, c := range sc.consumers {
		fmt.Fprintf(w, "consumer log %s: %s\n", c.name, consumerLine(c.report))
	}
	for _, p := range sc.problems {
		fmt.Fprintln(w, p.String())
	}
	damaged, warnings := sc.counts()
	summary := "no damage"
	if damaged > 0 {
		summary = plural(damaged, "file") + " DAMAGED"
	}
	fmt.Fprintf(w, "checked %s, %s, %s, %s: %s, %s\n", plural(len(sc.streams), "stream"), plural(nConsumers, "consumer"),
		plural(len(sc.stores), "other store"), plural(sc.jsonFiles, "JSON file"), summary, plural(warnings, "warning"))
}

// consumerLine describes a consumer log's report in one line.
func consumerLine(r *filestore.ConsumerVerifyReport) string {
	st := r.State
	return fmt.Sprintf("%s%s, delivered stream seq %d, ack floor %d, %d pending: %s",
		plural(r.Frames, "frame"), sealedWith(r.Cipher), st.Delivered.Stream, st.AckFloor.Stream, len(st.Pending), verdict(r.Problems))
}

// sealedWith notes an encrypted directory's cipher in a report line.
func sealedWith(c filestore.Cipher) string {
	if c == filestore.CipherNone {
		return ""
	}
	return ", sealed with " + c.String()
}

// printInspect writes inspect's tables.
func (sc *storeScan) printInspect(w io.Writer) error {
	fmt.Fprintf(w, "store %s\n\n", sc.root)
	t := newTable(w)
	fmt.Fprintln(t, "STREAM\tSTORAGE\tSUBJECTS\tMESSAGES\tBYTES\tFIRST SEQ\tLAST SEQ\tON DISK\tCONSUMERS")
	for _, st := range sc.streams {
		storage, subjects := "?", "?"
		if st.internal {
			storage, subjects = "internal", "-"
		}
		if st.meta != nil {
			storage, subjects = st.meta.Config.Storage, strings.Join(st.meta.Config.Subjects, ",")
		}
		if st.msgs == nil {
			fmt.Fprintf(t, "%s\t%s\t%s\t-\t-\t-\t-\t-\t%d\n", st.name, storage, subjects, len(st.consumers))
			continue
		}
		r := st.msgs
		fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%s\t%d\n", st.name, storage, subjects, r.Msgs, formatBytes(r.Bytes),
			r.FirstSeq, r.LastSeq, formatBytes(uint64(r.FileBytes)), len(st.consumers))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	var rows []string
	for _, st := range sc.streams {
		for _, c := range st.consumers {
			s := c.report.State
			ack := "?"
			if c.meta != nil {
				ack = c.meta.Config.AckPolicy
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", st.name, c.name, ack,
				s.Delivered.Stream, s.Delivered.Consumer, s.AckFloor.Stream, len(s.Pending), len(s.Redelivered)))
		}
	}
	if len(rows) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(t, "STREAM\tCONSUMER\tACK POLICY\tDELIVERED SEQ\tDELIVERED COUNT\tACK FLOOR\tACK PENDING\tREDELIVERED")
		for _, r := range rows {
			io.WriteString(t, r)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(sc.stores) > 0 {
		fmt.Fprintln(w)
		sort.Slice(sc.stores, func(i, j int) bool { return sc.stores[i].rel < sc.stores[j].rel })
		fmt.Fprintln(t, "STORE\tMESSAGES\tBYTES\tFIRST SEQ\tLAST SEQ\tON DISK")
		for _, o := range sc.stores {
			r := o.report
			fmt.Fprintf(t, "%s\t%d\t%s\t%d\t%d\t%s\n", o.rel, r.Msgs, formatBytes(r.Bytes), r.FirstSeq, r.LastSeq, formatBytes(uint64(r.FileBytes)))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if damaged, warnings := sc.counts(); damaged+warnings > 0 {
		fmt.Fprintf(w, "\n%s damaged, %s: run `leafbox store verify %s` for the list\n", plural(damaged, "file"), plural(warnings, "warning"), sc.root)
	}
	return nil
}
