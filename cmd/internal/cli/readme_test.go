package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// referenceEntry is one command of the README's CLI reference: a line
// "leafbox PATH... ARGS  description", then its indented flag lines.
type referenceEntry struct {
	line  int      // line number in README.md
	path  []string // command words; a word may list alternatives: "bash|zsh"
	flags []string // long flags named in the left column, without "--"
	left  string   // the left columns, for shorthand checks
}

var (
	commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$`)
	longFlag    = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	columnGap   = regexp.MustCompile(`\s{2,}`)
)

// readReference parses the ```text block of the README section "## CLI
// reference".
func readReference(t *testing.T) (entries []*referenceEntry, text string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := slices.Index(lines, "## CLI reference")
	if start < 0 {
		t.Fatal(`README.md has no "## CLI reference" section`)
	}
	inBlock := false
	var block []string
	for i := start + 1; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "## ") {
			break
		}
		if strings.HasPrefix(line, "```") {
			if inBlock {
				break
			}
			inBlock = true
			continue
		}
		if !inBlock {
			continue
		}
		block = append(block, line)
		// The left column: the synopsis or the flags, before the
		// description (two or more spaces after the indentation).
		trimmed := strings.TrimLeft(line, " ")
		left := columnGap.Split(trimmed, 2)[0]
		switch {
		case strings.HasPrefix(line, "leafbox"):
			e := &referenceEntry{line: i + 1, left: left}
			for _, w := range strings.Fields(left)[1:] {
				if !commandWord.MatchString(w) {
					break
				}
				e.path = append(e.path, w)
			}
			entries = append(entries, e)
		case trimmed == "" || len(entries) == 0:
			continue
		default:
			entries[len(entries)-1].left += " " + left
		}
	}
	if len(entries) == 0 {
		t.Fatal("README.md: no entries in the CLI reference")
	}
	for _, e := range entries {
		for _, m := range longFlag.FindAllStringSubmatch(e.left, -1) {
			e.flags = append(e.flags, m[1])
		}
	}
	return entries, strings.Join(block, "\n")
}

// matches reports whether the entry documents the command at path.
func (e *referenceEntry) matches(path []string) bool {
	if len(e.path) != len(path) {
		return false
	}
	for i, w := range path {
		if !slices.Contains(strings.Split(e.path[i], "|"), w) {
			return false
		}
	}
	return true
}

// prefixOf reports whether the entry documents a command under path.
func (e *referenceEntry) prefixOf(path []string) bool {
	return len(e.path) >= len(path) && (&referenceEntry{path: e.path[:len(path)]}).matches(path)
}

// commandTree returns leafbox's command tree as it is when it runs: with
// cobra's help and completion commands and its --version flag.
func commandTree() *cobra.Command {
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	return root
}

// walk calls f for every visible command under c, c included, with its
// path below the root.
func walk(c *cobra.Command, path []string, f func(*cobra.Command, []string)) {
	if c.Hidden {
		return
	}
	f(c, path)
	for _, sub := range c.Commands() {
		walk(sub, append(slices.Clip(path), sub.Name()), f)
	}
}

// flagsOf returns the flags a command takes: its own and those it
// inherits, without cobra's --help, which the reference states once.
func flagsOf(c *cobra.Command) []*pflag.Flag {
	var out []*pflag.Flag
	add := func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden {
			out = append(out, f)
		}
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	return out
}

// TestReadmeCLIReference keeps the README's CLI reference and the cobra
// commands in step, both ways: every command and every flag (persistent
// ones included) is in the reference under its command, and the
// reference names no command or flag that does not exist. A new command
// or flag fails this test until its line is added to README.md.
func TestReadmeCLIReference(t *testing.T) {
	entries, text := readReference(t)
	root := commandTree()
	if !strings.Contains(text, "--help") {
		t.Errorf("README.md CLI reference: cobra's -h, --help is not mentioned")
	}
	documented := map[*referenceEntry]bool{}
	walk(root, nil, func(c *cobra.Command, path []string) {
		name := strings.TrimSpace("leafbox " + strings.Join(path, " "))
		var mine []*referenceEntry
		for _, e := range entries {
			if e.matches(path) {
				mine = append(mine, e)
				documented[e] = true
			}
		}
		if len(mine) == 0 {
			if c.Runnable() || c.HasLocalFlags() {
				t.Errorf("README.md CLI reference: no line for %q (%s)", name, c.Short)
				return
			}
			// A group (leafbox config, leafbox uplink) is named by its
			// subcommands' lines.
			if !slices.ContainsFunc(entries, func(e *referenceEntry) bool { return e.prefixOf(path) }) {
				t.Errorf("README.md CLI reference: nothing under %q", name)
			}
			return
		}
		for _, f := range flagsOf(c) {
			if !slices.ContainsFunc(mine, func(e *referenceEntry) bool { return slices.Contains(e.flags, f.Name) }) {
				t.Errorf("README.md CLI reference: %q lacks --%s (%s)", name, f.Name, f.Usage)
				continue
			}
			if f.Shorthand != "" && !slices.ContainsFunc(mine, func(e *referenceEntry) bool {
				return strings.Contains(e.left, "-"+f.Shorthand+", --"+f.Name)
			}) {
				t.Errorf("README.md CLI reference: %q lacks the shorthand as -%s, --%s", name, f.Shorthand, f.Name)
			}
		}
	})

	// The other way: nothing in the reference that leafbox does not have.
	for _, e := range entries {
		if !documented[e] {
			t.Errorf("README.md:%d: %q is not a leafbox command", e.line, e.left)
			continue
		}
		for _, name := range e.flags {
			walk(root, nil, func(c *cobra.Command, path []string) {
				if e.matches(path) && c.LocalFlags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
					t.Errorf("README.md:%d: leafbox %s has no flag --%s", e.line, strings.Join(path, " "), name)
				}
			})
		}
	}
}
