package report

import "strings"

// Document is a report built once and rendered to every format.
type Document struct {
	// Title names the report ("crab report").
	Title string
	// Subject says what is compared ("3 arms compared with baseline").
	Subject string
	// Baseline is the arm every candidate is compared with.
	Baseline string
	// Units says how the figures are measured; renderers that write it as
	// a sentence capitalise it and end it with a period.
	Units []Span
	// Sections in page order.
	Sections []Section
}

// Section is a titled part of a report.
type Section struct {
	Title string
	// Charts marks the place of the charts: formats that draw them (HTML)
	// put them here, the others leave the section out.
	Charts bool
	Blocks []Block
}

// Block is a Paragraph, a List, a Table or Verdicts.
type Block interface{ block() }

// Paragraph is a run of text.
type Paragraph struct{ Spans []Span }

// List is a bulleted list; items may nest.
type List struct{ Items []Item }

// Item is a list item with its nested items.
type Item struct {
	Spans    []Span
	Children []Item
}

// Table is a header and rows of typed cells.
type Table struct {
	Header []string
	Rows   [][]Cell
}

// Verdicts lists each arm's verdict with the reasons for it.
type Verdicts struct{ Arms []ArmVerdict }

// ArmVerdict is one arm's line of the decision.
type ArmVerdict struct {
	Arm     string
	Verdict Cell // a verdict word, or a description for the baseline
	Reasons []string
}

func (Paragraph) block() {}
func (List) block()      {}
func (Table) block()     {}
func (Verdicts) block()  {}

// Span is a run of text, plain, bold or code.
type Span struct {
	Text       string
	Bold, Code bool
}

// Text is a plain span.
func Text(s string) Span { return Span{Text: s} }

// Code is a span of code: a command, a field name, an arm.
func Code(s string) Span { return Span{Text: s, Code: true} }

// Kind is what a table cell holds.
type Kind int

// Cell kinds.
const (
	KindText    Kind = iota // words: a name, a list of models
	KindFigure              // a figure, rounded for display, or "-" where it does not exist
	KindVerdict             // a verdict word
)

// Cell is one table cell: its kind and its text as every format prints it
// (figures rounded once, by package figure, with the precision of their
// unit).
type Cell struct {
	Kind Kind
	Text string
}

// textCell is a cell of words.
func textCell(s string) Cell { return Cell{Kind: KindText, Text: s} }

// figureCell is a cell holding a figure already written out.
func figureCell(s string) Cell { return Cell{Kind: KindFigure, Text: s} }

// verdictCell is a cell holding a verdict word.
func verdictCell(v string) Cell { return Cell{Kind: KindVerdict, Text: v} }

// item is a list item of plain text.
func item(s string, children ...Item) Item { return Item{Spans: []Span{Text(s)}, Children: children} }

// plain is the text of spans without markup.
func plain(sp []Span) string {
	var b strings.Builder
	for _, s := range sp {
		b.WriteString(s.Text)
	}
	return b.String()
}

// lead is the document's opening sentence as Markdown and HTML write it:
// the baseline, then the units as a sentence.
func (d *Document) lead() []Span {
	sp := []Span{Text("Baseline: "), Code(d.Baseline), Text(". ")}
	for i, u := range d.Units {
		if i == 0 && u.Text != "" {
			u.Text = strings.ToUpper(u.Text[:1]) + u.Text[1:]
		}
		sp = append(sp, u)
	}
	return append(sp, Text("."))
}
