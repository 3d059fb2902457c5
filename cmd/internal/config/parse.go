package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FieldError is one problem in a configuration, at a key path such as
// "authorization.users[1].nkey".
type FieldError struct {
	// Line is the 1-based line of the key in the file, or 0 if unknown.
	Line int
	// Path is the dotted key path; empty for syntax errors.
	Path string
	// Flag is the command-line flag the value came from, if any.
	Flag string
	// Err is the problem.
	Err error
}

// Error formats the problem as "line N: path: problem".
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	e.writeTail(&b)
	return b.String()
}

func (e *FieldError) writeTail(b *strings.Builder) {
	if e.Flag != "" {
		fmt.Fprintf(b, "flag %s: ", e.Flag)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
}

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// Error lists every problem found in a configuration, in file order.
type Error struct {
	// File is the configuration file's path; empty when parsed from bytes.
	File string
	// Problems are never empty.
	Problems []*FieldError
}

// Error formats one problem per line, compiler style: "file:line: path: problem".
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case e.File != "" && p.Line > 0:
			fmt.Fprintf(&b, "%s:%d: ", e.File, p.Line)
		case e.File != "" && p.Flag == "":
			fmt.Fprintf(&b, "%s: ", e.File)
		case p.Line > 0:
			fmt.Fprintf(&b, "line %d: ", p.Line)
		}
		p.writeTail(&b)
	}
	return b.String()
}

// Unwrap returns the problems, so errors.Is and errors.As see through.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

func newError(problems []*FieldError) error {
	if len(problems) == 0 {
		return nil
	}
	sort.SliceStable(problems, func(i, j int) bool {
		li, lj := problems[i].Line, problems[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0 // located problems first
		}
		return li < lj
	})
	return &Error{Problems: problems}
}

// posIndex records where each key path appears in the source.
type posIndex struct {
	lineOf map[string]int // "tls.cert_file" -> line of the key
	pathAt map[int]string // line -> first key path on it
}

func buildIndex(root *yaml.Node) *posIndex {
	ix := &posIndex{lineOf: map[string]int{}, pathAt: map[int]string{}}
	var walk func(n *yaml.Node, path string)
	add := func(path string, line int) {
		if _, ok := ix.lineOf[path]; !ok {
			ix.lineOf[path] = line
		}
		if _, ok := ix.pathAt[line]; !ok {
			ix.pathAt[line] = path
		}
	}
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key := n.Content[i]
				p := joinPath(path, key.Value)
				add(p, key.Line)
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := path + "[" + strconv.Itoa(i) + "]"
				add(p, c.Line)
				walk(c, p)
			}
		}
	}
	walk(root, "")
	return ix
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// has reports whether path appears in the source.
func (ix *posIndex) has(path string) bool {
	if ix == nil {
		return false
	}
	_, ok := ix.lineOf[path]
	return ok
}

// line returns the line of path, or of its nearest ancestor that appears
// in the source, or 0.
func (ix *posIndex) line(path string) int {
	if ix == nil {
		return 0
	}
	for path != "" {
		if l, ok := ix.lineOf[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

var (
	syntaxErrRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	typeErrRE   = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownRE   = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
)

// Parse parses a YAML configuration. Every problem is reported at once in
// a *Error; keys the Config does not know are errors.
func Parse(data []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(err)
	}
	ix := buildIndex(&root)

	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(c)
	switch {
	case errors.Is(err, io.EOF):
		// An empty file is the all-defaults configuration.
	case err != nil:
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, syntaxError(err)
		}
		problems := make([]*FieldError, 0, len(te.Errors))
		for _, msg := range te.Errors {
			problems = append(problems, typeProblem(ix, msg))
		}
		return nil, newError(problems)
	default:
		var extra yaml.Node
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, newError([]*FieldError{{Line: extra.Line, Err: errors.New("only one YAML document is allowed")}})
		}
	}
	c.index = ix
	c.hash = hashYAML(data)
	if problems := c.normalize(); len(problems) > 0 {
		return nil, newError(problems)
	}
	return c, nil
}

func syntaxError(err error) error {
	if m := syntaxErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return newError([]*FieldError{{Line: line, Err: errors.New(m[2])}})
	}
	return newError([]*FieldError{{Err: errors.New(strings.TrimPrefix(err.Error(), "yaml: "))}})
}

// typeProblem turns one of yaml's "line N: ..." messages into a FieldError
// with the key path found at that line.
func typeProblem(ix *posIndex, msg string) *FieldError {
	m := typeErrRE.FindStringSubmatch(msg)
	if m == nil {
		return &FieldError{Err: errors.New(msg)}
	}
	line, _ := strconv.Atoi(m[1])
	text := m[2]
	if u := unknownRE.FindStringSubmatch(text); u != nil {
		text = fmt.Sprintf("unknown key %q", u[1])
		keys := knownKeys[u[2]]
		if near := nearestKey(u[1], keys); near != "" {
			text += fmt.Sprintf(" (did you mean %q?)", near)
		} else if len(keys) > 0 {
			text += " (known keys: " + strings.Join(keys, ", ") + ")"
		}
	}
	return &FieldError{Line: line, Path: ix.pathAt[line], Err: errors.New(text)}
}

// knownKeys maps the type names yaml reports in unknown-key errors to the
// keys that type accepts, to list them in the message.
var knownKeys = func() map[string][]string {
	m := map[string][]string{}
	for _, v := range []any{
		Config{}, AuthorizationConfig{}, UserConfig{}, AccountConfig{}, PermissionsConfig{},
		subjectPermissionFields{}, responsePermissionFields{}, TLSConfig{}, jetStreamFields{},
		LeafNodesConfig{}, RemoteConfig{}, RemoteTLSConfig{}, LeafAuthorizationConfig{},
		UplinkConfig{}, UplinkLimitsConfig{}, DownlinkConfig{}, HealthzConfig{}, MQTTConfig{},
		UpgradeConfig{}, FleetConfig{},
	} {
		t := reflect.TypeOf(v)
		var keys []string
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name != "" && name != "-" {
				keys = append(keys, name)
			}
		}
		m[t.String()] = keys
	}
	return m
}()

// nearestKey returns the key of keys nearest to the unknown key, when it
// is near enough to be a typo (at most a third of its letters edited, at
// most 3, and one key is nearest); "" otherwise.
func nearestKey(key string, keys []string) string {
	limit := min(max(len(key)/3, 1), 3)
	best, bestDist, ties := "", limit+1, 0
	for _, k := range keys {
		switch d := editDistance(strings.ToLower(key), k); {
		case d < bestDist:
			best, bestDist, ties = k, d, 1
		case d == bestDist:
			ties++
		}
	}
	if ties != 1 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, counted in
// bytes (config keys are ASCII), with an adjacent swap counting as one
// edit.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// normalize moves ports given in listen and http to port and http_port,
// rejecting a file that gives two different ports.
func (c *Config) normalize() []*FieldError {
	var problems []*FieldError
	if p := c.Listen.Port; p != nil {
		if c.Port != 0 && c.Port != *p {
			problems = append(problems, c.fieldErr("listen", fmt.Errorf("port %d disagrees with port: %d", *p, c.Port)))
		}
		c.Port = *p
		c.Listen.Port = nil
	}
	if p := c.HTTP.Port; p != nil {
		if c.HTTPPort != nil && *c.HTTPPort != *p {
			problems = append(problems, c.fieldErr("http", fmt.Errorf("port %d disagrees with http_port: %d", *p, *c.HTTPPort)))
		}
		c.HTTPPort = p
		c.HTTP.Port = nil
	}
	return problems
}

// fieldErr builds a FieldError for path, located in the source file, or
// attributed to the command-line flag that set it.
func (c *Config) fieldErr(path string, err error) *FieldError {
	if flag := c.flags.flagFor(path); flag != "" {
		return &FieldError{Path: path, Flag: flag, Err: err}
	}
	return &FieldError{Line: c.index.line(path), Path: path, Err: err}
}
