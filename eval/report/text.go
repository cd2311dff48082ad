package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// WriteText writes d as aligned plain text.
func (d *Document) WriteText(w io.Writer) error { return d.write(w, textStyle{}) }

// WriteMarkdown writes d as Markdown.
func (d *Document) WriteMarkdown(w io.Writer) error { return d.write(w, mdStyle{}) }

// style is how a plain-text format marks up a document's parts.
type style interface {
	header(b *strings.Builder, d *Document)
	heading(b *strings.Builder, title string)
	spans(sp []Span) string
	paragraph(b *strings.Builder, sp []Span)
	item(b *strings.Builder, depth int, sp []Span)
	verdict(b *strings.Builder, arm, verdict string)
	table(b *strings.Builder, t *Table)
}

// write renders every section but the charts, blocks of a section apart
// by a blank line.
func (d *Document) write(w io.Writer, st style) error {
	var b strings.Builder
	st.header(&b, d)
	for _, sec := range d.Sections {
		if sec.Charts {
			continue
		}
		st.heading(&b, sec.Title)
		for i, bl := range sec.Blocks {
			if i > 0 {
				b.WriteString("\n")
			}
			switch bl := bl.(type) {
			case Paragraph:
				st.paragraph(&b, bl.Spans)
			case List:
				writeItems(&b, st, bl.Items, 0)
			case *Table:
				st.table(&b, bl)
			case Verdicts:
				for _, a := range bl.Arms {
					st.verdict(&b, a.Arm, a.Verdict.Text)
					for _, r := range a.Reasons {
						st.item(&b, 1, []Span{Text(r)})
					}
				}
			default:
				return fmt.Errorf("report: a block of type %T has no plain-text form", bl)
			}
		}
	}
	_, err := io.WriteString(w, escapeControl(b.String()))
	return err
}

// escapeControl writes every control character but the line break — an
// ANSI escape sequence in an arm name, a carriage return in a reason — and
// every bidirectional override as a Go escape (\x1b, \r, \u202e), so
// that names from records cannot rewrite the terminal or reorder a line.
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	if r == '\n' {
		return false
	}
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == utf8.RuneError
}

func writeItems(b *strings.Builder, st style, items []Item, depth int) {
	for _, it := range items {
		st.item(b, depth, it.Spans)
		writeItems(b, st, it.Children, depth+1)
	}
}

// textStyle writes headings as plain lines, indents paragraphs and lists
// under them, and aligns tables in columns.
type textStyle struct{}

func (textStyle) header(b *strings.Builder, d *Document) {
	b.WriteString(d.Title + ": " + d.Subject + "\n")
	b.WriteString(plain(d.Units) + "\n")
}

func (textStyle) heading(b *strings.Builder, title string) { b.WriteString("\n" + title + "\n") }

func (textStyle) spans(sp []Span) string { return plain(sp) }

func (st textStyle) paragraph(b *strings.Builder, sp []Span) {
	b.WriteString("  " + st.spans(sp) + "\n")
}

func (st textStyle) item(b *strings.Builder, depth int, sp []Span) {
	b.WriteString(strings.Repeat("  ", depth+1) + "- " + st.spans(sp) + "\n")
}

func (textStyle) verdict(b *strings.Builder, arm, verdict string) {
	b.WriteString("  " + arm + ": " + verdict + "\n")
}

func (textStyle) table(b *strings.Builder, t *Table) {
	// Cells are escaped before they are aligned, so an escaped name keeps
	// its column.
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	header := make([]string, len(t.Header))
	for i, h := range t.Header {
		header[i] = escapeControl(h)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range t.Rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = escapeControl(c.Text)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// mdStyle writes Markdown: "##" headings, "-" lists, pipe tables.
type mdStyle struct{}

func (st mdStyle) header(b *strings.Builder, d *Document) {
	b.WriteString("# " + d.Title + "\n\n")
	b.WriteString(st.spans(d.lead()) + "\n")
}

func (mdStyle) heading(b *strings.Builder, title string) { b.WriteString("\n## " + title + "\n\n") }

func (mdStyle) spans(sp []Span) string {
	var b strings.Builder
	for _, s := range sp {
		switch {
		case s.Code:
			b.WriteString("`" + s.Text + "`")
		case s.Bold:
			b.WriteString("**" + s.Text + "**")
		default:
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

func (st mdStyle) paragraph(b *strings.Builder, sp []Span) { b.WriteString(st.spans(sp) + "\n") }

func (st mdStyle) item(b *strings.Builder, depth int, sp []Span) {
	b.WriteString(strings.Repeat("  ", depth) + "- " + st.spans(sp) + "\n")
}

func (mdStyle) verdict(b *strings.Builder, arm, verdict string) {
	b.WriteString("- **" + arm + "**: " + verdict + "\n")
}

func (mdStyle) table(b *strings.Builder, t *Table) {
	row := func(c []string) string {
		out := make([]string, len(c))
		for i, v := range c {
			out[i] = strings.ReplaceAll(v, "|", `\|`)
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	b.WriteString(row(t.Header))
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	b.WriteString("|" + strings.Join(sep, "|") + "|\n")
	for _, r := range t.Rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = c.Text
		}
		b.WriteString(row(cells))
	}
}
