package cli

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// table lines up tab-separated cells in columns, as text/tabwriter does
// with NewWriter(w, 0, 4, 2, ' ', 0): a column is as wide as its widest
// cell plus two spaces, over each run of consecutive lines that have a
// tab-terminated cell in it; a line's last cell is not padded. It is
// written here for the binary's size (text/tabwriter is about 8 KB of an
// ARM binary, for the four status tables); write everything, then Flush.
type table struct {
	w   io.Writer
	buf bytes.Buffer
}

// newTable returns a table that writes to w on Flush.
func newTable(w io.Writer) *table { return &table{w: w} }

// Write buffers p.
func (t *table) Write(p []byte) (int, error) { return t.buf.Write(p) }

// tablePadding is the space after a column's widest cell.
const tablePadding = 2

// Flush writes the buffered lines, aligned, and empties the buffer.
func (t *table) Flush() error {
	text := t.buf.String()
	t.buf.Reset()
	unterminated := text != "" && !strings.HasSuffix(text, "\n")
	var lines [][]string
	for text != "" {
		line, rest, _ := strings.Cut(text, "\n")
		lines = append(lines, strings.Split(line, "\t"))
		text = rest
	}
	if last := len(lines) - 1; unterminated && len(lines[last]) > 1 && lines[last][len(lines[last])-1] == "" {
		// tabwriter keeps an unterminated line's last cell only when it
		// has text.
		lines[last] = lines[last][:len(lines[last])-1]
	}
	var out bytes.Buffer
	t.format(&out, lines, nil)
	if unterminated {
		out.Truncate(out.Len() - 1) // the last line had no line break
	}
	_, err := t.w.Write(out.Bytes())
	return err
}

// format writes lines, with widths the widths of the columns that every
// one of them has, finding the blocks of the next column as tabwriter
// does.
func (t *table) format(out *bytes.Buffer, lines [][]string, widths []int) {
	column := len(widths)
	start := 0
	for i := 0; i < len(lines); i++ {
		if column >= len(lines[i])-1 {
			continue
		}
		writeLines(out, lines[start:i], widths)
		start = i
		width := 0
		for ; i < len(lines) && column < len(lines[i])-1; i++ {
			width = max(width, utf8.RuneCountInString(lines[i][column])+tablePadding)
		}
		t.format(out, lines[start:i], append(widths, width))
		start = i
		i-- // the loop's i++ comes back to the line that ended the block
	}
	writeLines(out, lines[start:], widths)
}

// writeLines writes lines, padding the cells of the columns in widths.
func writeLines(out *bytes.Buffer, lines [][]string, widths []int) {
	for _, line := range lines {
		for j, cell := range line {
			out.WriteString(cell)
			if j < len(widths) {
				for n := widths[j] - utf8.RuneCountInString(cell); n > 0; n-- {
					out.WriteByte(' ')
				}
			}
		}
		out.WriteByte('\n')
	}
}
