// Package config is leafbox's configuration: the YAML schema, its
// defaults, the command-line overrides and the checks, with every problem
// reported at its file and line. It builds nothing that runs; the
// composition root (cmd/internal/app) turns a validated Config into the
// subsystems' own configurations.
//
// The file is YAML with keys named like nats-server's own options (listen,
// port, http_port, authorization, accounts, tls, jetstream, leafnodes), so
// NATS documentation maps across. Unknown keys are errors. A configuration
// goes through four steps, each explicit:
//
//	cfg, err := config.Load(path)          // or config.Default() or config.Parse(data)
//	overrides.Apply(cfg)                   // command-line flags win over the file
//	cfg.SetDefaults(config.OSEnv())        // fill defaults; env only through Env
//	err = cfg.Validate()                   // *Error with line numbers
//
// Sizes (max_payload, max_pending, ...) are integers or strings with a unit,
// as in nats-server: K, M, G, T are powers of 1000 and KB, KiB, MB, MiB, GB,
// GiB, TB, TiB are powers of 1024 ("1MB" is 1048576 bytes, as in
// nats-server). Durations are Go duration strings ("10s", "2m", "1h30m") or
// plain numbers of seconds. Relative file paths (tls.cert_file, store_dir,
// ...) are relative to the directory of the configuration file.
//
// Errors about the file are *Error values listing every problem found,
// each with its line and the key's path, like
// "gateway.yaml:12: tls.cert_file: open certs/x.pem: no such file or directory".
//
// Error messages of this package carry no package prefix: they are shown to
// users by the command line, which prefixes the program's name.
//
// # Validation
//
// Validate checks each section with the rules of the subsystem that owns
// the fact, so that one implementation decides each: JetStream names
// (streams, consumers, uplinks, downlinks, domains) with jsapi.CheckName,
// subjects with core/subject, compression modes with
// leaf.NormalizeCompression, discard policies with
// store.ParseDiscardPolicy, users and permissions with auth.Config.Validate
// and each remote with leaf.Config.Validate. The checks in this package
// come first and give the precise key path; the subsystems' own checks run
// last, as a final word on what the subsystem would refuse.
//
// Preflight checks a valid Config against the machine (listen hosts,
// store directories), changing nothing.
//
// # Store layout
//
// Layout returns where the store directory keeps streams, outboxes, dead
// letters and state files (store/storedir); the gateway identity is kept
// there too (IdentityPath, ApplyIdentity).
package config
