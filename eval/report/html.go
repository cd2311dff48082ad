package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// WriteHTML writes d as one self-contained HTML page (report.html): the
// document's tables and lists, beside charts drawn as inline SVG where the
// document places them. It loads nothing from the network: no scripts, no
// external style sheets, fonts or images.
//
// The charts are the latency CDF of every arm and its tail, hit-path against
// miss-path latency for arms with a cache, pass rate and latency per input
// group, and, when some arm routes, the arms frontier (cost per pass against
// passing requests, one point per arm). in.Summary is the summary d was
// built from; the latency distributions are drawn from in.Records (warm-up
// records left out, as in the summary). With no records (nil) the page says
// that those charts need them and draws the rest from the summary alone.
func (d *Document) WriteHTML(w io.Writer, in Input) error {
	s, recs := in.Summary, in.Records
	page := htmlPage{Baseline: shown(s.Baseline), Intro: []htmlBlock{{Para: htmlSpans(d.lead())}}, Rows: verdictRows(s)}
	page.Goodput = hasGoodput(page.Rows)
	if n := len(s.Decision.Warnings); n > 0 {
		page.Warnings = words.Count(n, "warning")
	}
	page.Title = fmt.Sprintf("%s: %s against %s", d.Title, words.Count(len(s.Arms)-1, "candidate"), shown(s.Baseline))
	for i := range s.Arms {
		page.Verdicts = append(page.Verdicts, htmlChip{Name: shown(s.Arms[i].Name), Verdict: s.Arms[i].Verdict, Class: verdictClass(s.Arms[i].Verdict), Colour: cssColour(i)})
	}
	page.Sub = shown(runLine(recs))

	verdicts := map[string]string{}
	for i := range s.Arms {
		verdicts[shown(s.Arms[i].Name)] = s.Arms[i].Verdict
	}
	seen := map[string]int{}
	for _, sec := range d.Sections {
		id := slug(navLabel(sec.Title))
		seen[id]++
		if seen[id] > 1 {
			id += "-" + strconv.Itoa(seen[id])
		}
		hs := htmlSection{ID: id, Title: shown(sec.Title)}
		if sec.Charts {
			charts, note := buildCharts(s, recs)
			for i := range charts {
				charts[i].Title, charts[i].Caption = shown(charts[i].Title), shown(charts[i].Caption)
			}
			hs.Charts, hs.Note = charts, htmlSpans(note)
		}
		for _, bl := range sec.Blocks {
			hb, err := htmlBlockOf(bl, verdicts)
			if err != nil {
				return err
			}
			hs.Blocks = append(hs.Blocks, hb)
		}
		page.Sections = append(page.Sections, hs)
		page.Nav = append(page.Nav, htmlChip{Name: shown(navLabel(sec.Title)), Class: id})
	}

	var buf bytes.Buffer
	if err := htmlTmpl.Execute(&buf, page); err != nil {
		return fmt.Errorf("report: writing html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// htmlBlockOf is a document block as the page template draws it; verdicts
// (shown arm name → verdict) completes the pieces of a split table.
func htmlBlockOf(bl Block, verdicts map[string]string) (htmlBlock, error) {
	switch bl := bl.(type) {
	case Paragraph:
		return htmlBlock{Para: htmlSpans(bl.Spans)}, nil
	case List:
		return htmlBlock{Items: htmlItems(bl.Items)}, nil
	case *Table:
		return htmlBlock{Tables: htmlTables(bl, verdicts)}, nil
	case Verdicts:
		var items []htmlItem
		for _, a := range bl.Arms {
			it := htmlItem{Spans: []htmlSpan{{Text: shown(a.Arm), Bold: true}, {Text: ": "}, {Text: shown(a.Verdict.Text)}}}
			if a.Verdict.Kind == KindVerdict {
				it.Spans[2].Class = verdictClass(a.Verdict.Text)
			}
			for _, r := range a.Reasons {
				it.Children = append(it.Children, htmlItem{Spans: []htmlSpan{{Text: shown(r)}}})
			}
			items = append(items, it)
		}
		return htmlBlock{Items: items}, nil
	}
	return htmlBlock{}, fmt.Errorf("report: a block of type %T has no html form", bl)
}

func htmlSpans(sp []Span) []htmlSpan {
	out := make([]htmlSpan, len(sp))
	for i, s := range sp {
		out[i] = htmlSpan{Text: shown(s.Text), Bold: s.Bold, Code: s.Code}
	}
	return out
}

func htmlItems(items []Item) []htmlItem {
	out := make([]htmlItem, len(items))
	for i, it := range items {
		out[i] = htmlItem{Spans: htmlSpans(it.Spans), Children: htmlItems(it.Children)}
	}
	return out
}

// htmlRows right-aligns the columns of figures (every cell a figure; never
// the first, which names the row), colours verdict cells and lets cells of
// words wrap.
func htmlRows(t *Table) [][]htmlCell {
	width := len(t.Header)
	for _, r := range t.Rows {
		width = max(width, len(r))
	}
	num := make([]bool, width)
	for j := 1; j < width; j++ {
		num[j] = true
		for _, r := range t.Rows {
			if j < len(r) && r[j].Kind != KindFigure {
				num[j] = false
				break
			}
		}
	}
	out := make([][]htmlCell, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = make([]htmlCell, len(r))
		for j, c := range r {
			out[i][j].Text = shown(c.Text)
			switch {
			case c.Kind == KindVerdict:
				out[i][j].Class = verdictClass(c.Text)
			case num[j]:
				out[i][j].Class = "num"
			case c.Kind == KindText:
				out[i][j].Class = "words"
			}
		}
	}
	return out
}

// htmlPage is what the page template renders.
type htmlPage struct {
	Title, Sub, Baseline string
	Warnings             string // "2 warnings"; empty when none
	Verdicts             []htmlChip
	Rows                 []htmlVerdict
	Goodput              bool // some arm has a goodput delta: its column is drawn
	Intro                []htmlBlock
	Nav                  []htmlChip
	Sections             []htmlSection
}

// htmlChip is a name with a CSS class: a verdict badge with the arm's chart
// colour, or a navigation link (Class holds the section id).
type htmlChip struct{ Name, Verdict, Class, Colour string }

// htmlSection is one section of the document, or the charts.
type htmlSection struct {
	ID, Title string
	Blocks    []htmlBlock
	Charts    []htmlChart
	Note      []htmlSpan
}

// htmlBlock is a paragraph, a list or a table (drawn as one or more).
type htmlBlock struct {
	Para   []htmlSpan
	Items  []htmlItem
	Tables []htmlTable
}

// htmlItem is a list item with its nested items.
type htmlItem struct {
	Spans    []htmlSpan
	Children []htmlItem
}

// htmlSpan is a run of text, plain, bold or code.
type htmlSpan struct {
	Text       string
	Bold, Code bool
	Class      string
}

// htmlCell is a table cell; Class right-aligns numbers, colours verdicts
// and lets words wrap.
type htmlCell struct{ Text, Class string }

// htmlChart is one inline SVG chart with its caption.
type htmlChart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

func verdictClass(v string) string {
	switch v {
	case analysis.VerdictAccept:
		return "v-accept"
	case analysis.VerdictReject:
		return "v-reject"
	case analysis.VerdictBaseline, analysis.VerdictNoGain, analysis.VerdictInconclusive, analysis.VerdictIncomplete:
		return "v-baseline" // muted: neither a win nor a rejection
	}
	return ""
}

// shown makes control characters visible, written as Go writes them in a
// string: \t, \n, \r, \x07, \u0085. Names come from experiment files and
// records, and a control character in one would otherwise vanish, or break
// the inline SVG, whose XML does not allow it. html/template escapes the
// rest.
func shown(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

// runLine names the runs and counts the records behind the page.
func runLine(recs *records.RecordSet) string {
	if recs.Len() == 0 {
		return "drawn from the summary alone (no records)"
	}
	names, warm := recs.RunIDs(), recs.Warmup()
	line := words.Count(recs.Len(), "record")
	if warm > 0 {
		line += fmt.Sprintf(" (%d warm-up, left out)", warm)
	}
	switch {
	case len(names) == 1:
		line = "run " + names[0] + " · " + line
	case len(names) > 1:
		line = fmt.Sprintf("%d runs (%s) · %s", len(names), words.Shortlist(names), line)
	}
	return line
}

// navLabel shortens a section title for the navigation bar: the words
// before a colon or a parenthesis.
func navLabel(title string) string {
	if i := strings.IndexAny(title, ":("); i > 0 {
		return strings.TrimSpace(title[:i])
	}
	return title
}

// slug makes an element id from a heading: lower-case letters and digits
// joined by dashes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "section"
	}
	return b.String()
}

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--accept:#1a7f37;--reject:#cf222e;--base:#59636e}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif}
header{background:var(--card);border-bottom:1px solid var(--line);padding:14px 28px 10px}
header h1{margin:0 0 2px;font-size:22px;overflow-wrap:anywhere}
header p{margin:2px 0;color:var(--muted);overflow-wrap:anywhere}
nav{position:sticky;top:0;z-index:1;background:var(--card);border-bottom:1px solid var(--line);padding:6px 28px;font-size:13px}
nav a{color:var(--fg);text-decoration:none;margin-right:14px}
nav a:hover{text-decoration:underline}
main{padding:8px 28px 40px;max-width:1400px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:4px 20px 16px;margin:16px 0}
h2{font-size:18px;margin:14px 0 10px;overflow-wrap:anywhere}
h3{font-size:15px;margin:10px 0 4px}
.verdicts{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0 6px}
.chip{border-radius:999px;padding:1px 10px;font-size:13px;border:1px solid currentColor;max-width:100%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.chip b{font-weight:600}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:baseline}
.sw.base{background-image:repeating-linear-gradient(45deg,#fff 0 2px,transparent 2px 4px)}
.tables{display:flex;flex-wrap:wrap;gap:0 28px;align-items:flex-start}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums;margin:6px 0 10px}
caption{text-align:left;font-size:12px;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;padding:2px 0}
th{text-align:left;font-weight:600;border-bottom:2px solid var(--line);padding:4px 10px;background:var(--bg);vertical-align:bottom}
td{border-bottom:1px solid var(--line);padding:3px 10px;white-space:nowrap}
td.num{text-align:right}
td.words{white-space:normal;min-width:7em;max-width:14em;overflow-wrap:anywhere}
tbody tr:hover{background:#eef2f6}
.v-accept{color:var(--accept);font-weight:600}
.v-reject{color:var(--reject);font-weight:600}
.v-baseline{color:var(--base)}
table.decision{width:100%;margin:4px 0 6px;font-size:14px}
table.decision td{border-bottom:none;padding:2px 10px 0 0;vertical-align:baseline}
table.decision th{padding:3px 10px 3px 0;background:none}
table.decision td.arm{white-space:normal;min-width:10em;max-width:16em;overflow-wrap:anywhere;font-weight:600}
table.decision td.fig{white-space:normal}
table.decision td.fig span{white-space:nowrap}
table.decision tr.why td{border-bottom:1px solid var(--line);padding:0 0 3px 15px;color:var(--muted);font-size:12.5px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:0}
table.decision tr.why:last-child td{border-bottom:none}
.better{color:var(--accept)}
.worse{color:var(--reject)}
.bad{color:var(--reject);font-weight:600}
.checks span+span::before{content:"· ";color:var(--muted);font-weight:400}
code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:90%;background:var(--bg);padding:0 4px;border-radius:4px;overflow-wrap:anywhere}
ul{padding-left:22px;margin:6px 0}
li{margin:2px 0;overflow-wrap:anywhere}
figure{margin:14px 0 22px}
figcaption{color:var(--muted);font-size:13px;max-width:960px}
svg{display:block;width:100%;max-width:960px;height:auto}
svg text{font-family:"Liberation Sans",Arimo,Arial,Helvetica,sans-serif !important}
.note{color:var(--muted)}
main p{overflow-wrap:anywhere}
@media print{nav{display:none}section{break-inside:avoid-page;border:none}}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p>{{.Sub}}</p>
{{- range .Intro}}{{template "block" .}}{{end}}
<div class="verdicts">{{range .Verdicts}}<span class="chip {{.Class}}"><b>{{.Name}}</b> {{.Verdict}}</span>{{end}}</div>
<table class="decision" id="verdicts">
<thead><tr><th>arm</th><th>verdict</th><th>passes</th><th>latency Δ per task: mean [95% CI]</th><th>cost Δ per task: mean [95% CI]</th>{{if .Goodput}}<th>goodput Δ: mean [95% CI]</th>{{end}}<th>gate checks</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="arm-row"><td class="arm"><i class="sw{{if eq .Verdict "baseline"}} base{{end}}" style="background-color:{{.Colour}}"></i>{{.Arm}}</td><td class="verdict {{.Class}}">{{.Verdict}}</td><td class="fig"><span>{{.Passes}}</span>{{if .PassesBase}} <span>{{.PassesBase}}</span>{{end}}</td><td class="fig{{if .LatencyClass}} {{.LatencyClass}}{{end}}"><span>{{.Latency}}</span>{{if .LatencyCI}} <span>{{.LatencyCI}}</span>{{end}}</td><td class="fig{{if .CostClass}} {{.CostClass}}{{end}}"><span>{{.Cost}}</span>{{if .CostCI}} <span>{{.CostCI}}</span>{{end}}</td>{{if $.Goodput}}<td class="fig{{if .GoodputClass}} {{.GoodputClass}}{{end}}"><span>{{or .Goodput "-"}}</span>{{if .GoodputCI}} <span>{{.GoodputCI}}</span>{{end}}</td>{{end}}<td class="fig checks">{{range $i, $c := .Checks}}{{if $i}} {{end}}<span{{if $c.Bad}} class="bad"{{end}}>{{$c.Text}}</span>{{else}}-{{end}}</td></tr>
<tr class="why"><td colspan="{{if $.Goodput}}7{{else}}6{{end}}" title="{{.Reason}}">{{.Reason}}</td></tr>
{{end}}</tbody></table>
<p>Every reason in full: <a href="#decision">Decision</a>{{if .Warnings}} · <span class="v-reject">{{.Warnings}}</span>: see <a href="#warnings">Warnings</a>{{end}}.</p>
</header>
<nav>{{range .Nav}}<a href="#{{.Class}}">{{.Name}}</a>{{end}}</nav>
<main>
{{- range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{- if .Note}}<p class="note">{{template "spans" .Note}}</p>{{end}}
{{- range .Charts}}
<figure id="{{.ID}}">
<h3>{{.Title}}</h3>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{- end}}
{{- range .Blocks}}{{template "block" .}}{{end}}
</section>
{{- end}}
</main>
</body>
</html>
{{- define "spans"}}{{range .}}{{if .Code}}<code>{{.Text}}</code>{{else if .Bold}}<b>{{.Text}}</b>{{else if .Class}}<span class="{{.Class}}">{{.Text}}</span>{{else}}{{.Text}}{{end}}{{end}}{{end}}
{{- define "items"}}<ul>{{range .}}<li>{{template "spans" .Spans}}{{if .Children}}{{template "items" .Children}}{{end}}</li>{{end}}</ul>{{end}}
{{- define "block"}}
{{- if .Tables}}<div class="tables">{{range .Tables}}<div class="scroll"><table>
{{- if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<thead><tr>{{range .Header}}<th>{{range $i, $p := .}}{{if $i}}<wbr>{{end}}{{$p}}{{end}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}</div>
{{else if .Items}}{{template "items" .Items}}
{{else if .Para}}<p>{{template "spans" .Para}}</p>
{{end}}
{{- end}}
`))
