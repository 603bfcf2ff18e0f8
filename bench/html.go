package bench

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nfbo/nfbo/rundir"
	"gonum.org/v1/plot/vg"
)

// Molecule is one evaluated molecule as the HTML report shows it.
type Molecule struct {
	Call   int     // the paid call that scored it
	Score  float64 // its score
	SMILES string  // its RDKit canonical SMILES (the SMILES scored when the log has none)
	Name   string  // its name in the user's initial file, if it has one (Run.Names)
	// From says how the optimiser made it ("crossover of calls 12 and 40"), when the log keeps it, or is empty.
	From string
	// SVG is its 2D structure, an SVG element drawn by RDKit (trusted markup), or empty.
	SVG template.HTML
	// Breaks is the rule of the default chemistry rules the molecule breaks (ReportOptions.Check), or empty.
	Breaks string
}

// CheckFunc says for each molecule "" when it keeps the default chemistry rules, else the rule it breaks.
// nfbo's report checks with RDKit through the objective worker.
type CheckFunc func(ctx context.Context, smiles []string) ([]string, error)

// Check fills the molecules' Breaks with check's verdicts. Without check (RDKit missing) it does nothing.
func Check(ctx context.Context, mols []Molecule, check CheckFunc) error {
	if check == nil || len(mols) == 0 {
		return nil
	}
	smiles := make([]string, len(mols))
	for i, m := range mols {
		smiles[i] = m.SMILES
	}
	why, err := check(ctx, smiles)
	if err != nil {
		return fmt.Errorf("bench: checking molecules against the default rules: %w", err)
	}
	if len(why) != len(mols) {
		return fmt.Errorf("bench: %d verdicts for %d molecules", len(why), len(mols))
	}
	for i, w := range why {
		mols[i].Breaks = w
	}
	return nil
}

// breaking counts the molecules that break a default rule.
func breaking(mols []Molecule) int {
	n := 0
	for _, m := range mols {
		if m.Breaks != "" {
			n++
		}
	}
	return n
}

// DrawFunc returns an SVG drawing (an inline-ready <svg> element, or "" when it cannot be drawn) of each
// molecule, in order. nfbo's report draws with RDKit through the objective worker.
type DrawFunc func(ctx context.Context, smiles []string) ([]string, error)

// BestMolecules returns the run's k best molecules, best first, each once (by canonical SMILES), with the call
// that first paid for it; molecules answered with an error are left out.
func BestMolecules(r Run, k int) []Molecule {
	recs := slices.Clone(r.Records)
	rundir.SortByGain(recs, r.Info)
	var out []Molecule
	seen := map[string]bool{}
	callOf := make(map[string]int, len(r.Records))
	for _, rec := range r.Records {
		if _, ok := callOf[rec.SMILES]; !ok {
			callOf[rec.SMILES] = rec.Call
		}
	}
	for _, rec := range recs {
		s := rec.Canonical
		if s == "" {
			s = rec.SMILES
		}
		if rec.Error != "" || seen[s] {
			continue
		}
		seen[s] = true
		name := r.Names[rec.SMILES]
		if name == "" {
			name = r.Names[s]
		}
		out = append(out, Molecule{Call: rec.Call, Score: rec.Score, SMILES: s, Name: name, From: originText(rec.From, callOf)})
		if len(out) == k {
			break
		}
	}
	return out
}

// originText says how a molecule was made, its parents named by the calls that paid for them (callOf, by the
// SMILES the optimiser sent) or as initial molecules; "" without an origin.
func originText(o *rundir.Origin, callOf map[string]int) string {
	if o == nil {
		return ""
	}
	var names []string
	for _, p := range o.Parents {
		if c, ok := callOf[p]; ok {
			names = append(names, fmt.Sprintf("call %d", c))
		} else {
			names = append(names, "an initial molecule")
		}
	}
	switch {
	case o.By == rundir.ByFlow && len(names) == 1:
		return "decoded by the flow near " + names[0]
	case o.By == rundir.ByCrossover && len(names) == 2:
		return "crossover of " + names[0] + " and " + names[1]
	case o.By == rundir.ByMutation && len(names) == 1:
		return "mutant of " + names[0]
	}
	return strings.TrimSpace(o.By + " " + strings.Join(names, ", "))
}

// Draw fills the molecules' SVG with draw's drawings. Without draw (RDKit missing) it does nothing.
func Draw(ctx context.Context, mols []Molecule, draw DrawFunc) error {
	if draw == nil || len(mols) == 0 {
		return nil
	}
	smiles := make([]string, len(mols))
	for i, m := range mols {
		smiles[i] = m.SMILES
	}
	svgs, err := draw(ctx, smiles)
	if err != nil {
		return fmt.Errorf("bench: drawing molecules: %w", err)
	}
	if len(svgs) != len(mols) {
		return fmt.Errorf("bench: %d drawings for %d molecules", len(svgs), len(mols))
	}
	for i, s := range svgs {
		if strings.HasPrefix(strings.TrimSpace(s), "<svg") {
			mols[i].SVG = template.HTML(s)
		}
	}
	return nil
}

// RunPage is one run's HTML page: its figures, its curve and its best molecules.
type RunPage struct {
	Run       Run
	Molecules []Molecule
	// Suite is the link back to the suite's page, or empty.
	Suite string
}

// SuitePage is a suite's HTML page: the tables of report.md, the curves per task, and the runs with links to
// their pages.
type SuitePage struct {
	Title string
	Runs  []Run
	// RunLinks maps a run's directory to the relative link of its page.
	RunLinks map[string]string
	Warnings []string
}

// WriteRunHTML writes the run's page: a self-contained HTML document (inline CSS and SVG, no network).
func WriteRunHTML(w io.Writer, pg RunPage) error {
	curve, err := runCurveSVG(pg.Run)
	if err != nil {
		return err
	}
	f := pg.Run.Figures()
	i := pg.Run.Info
	data := struct {
		RunPage
		Title  string
		Curve  template.HTML
		Fig    Figures
		Status string
	}{pg, fmt.Sprintf("%s · %s · seed %d (%s)", taskLabel(i), i.Method, i.Seed, i.Setting), curve, f, runStatus(pg.Run)}
	if i.Version != "" {
		data.Status += " · nfbo " + i.Version
	}
	return runTmpl.Execute(w, data)
}

// WriteSuiteHTML writes the suite's page: a self-contained HTML document.
func WriteSuiteHTML(w io.Writer, pg SuitePage) error {
	var md bytes.Buffer
	if err := WriteMarkdown(&md, pg.Runs); err != nil {
		return err
	}
	plots, err := taskPlots(pg.Runs)
	if err != nil {
		return err
	}
	var curves []template.HTML
	for _, tp := range plots {
		svg, err := plotSVG(tp.p)
		if err != nil {
			return err
		}
		curves = append(curves, svg)
	}
	type runRow struct {
		Run
		Link   string
		Fig    Figures
		Status string
	}
	var rows []runRow
	for _, r := range pg.Runs {
		rows = append(rows, runRow{r, pg.RunLinks[r.Dir], r.Figures(), runStatus(r)})
	}
	data := struct {
		SuitePage
		Tables template.HTML
		Curves []template.HTML
		Rows   []runRow
	}{pg, markdownHTML(md.String()), curves, rows}
	return suiteTmpl.Execute(w, data)
}

func runStatus(r Run) string {
	switch {
	case r.row != nil && r.Info.Finished:
		return "finished (a runs.tsv row)"
	case r.row != nil:
		return "unfinished (a runs.tsv row)"
	case r.NoLog:
		return "without a log"
	case r.Info.Finished:
		return "finished"
	case r.Info.Error != "":
		return "stopped"
	}
	return "unfinished"
}

// runCurveSVG is the run's best score against calls.
func runCurveSVG(r Run) (template.HTML, error) {
	plots, err := taskPlots([]Run{r})
	if err != nil || len(plots) == 0 {
		return "", err
	}
	plots[0].p.Title.Text = "best score against objective calls"
	return plotSVG(plots[0].p)
}

// plotSVG renders a plot as an inline SVG element.
func plotSVG(p interface {
	WriterTo(w, h vg.Length, format string) (io.WriterTo, error)
}) (template.HTML, error) {
	wt, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, "svg")
	if err != nil {
		return "", fmt.Errorf("bench: plot: %w", err)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return "", fmt.Errorf("bench: plot: %w", err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // the XML declaration may not stand inside HTML
	}
	return template.HTML(s), nil
}

// markdownHTML renders the Markdown that WriteMarkdown writes (### headings, pipe tables, paragraphs) as HTML,
// every cell and line escaped.
func markdownHTML(md string) template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	inTable, header := false, false
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		isRow := strings.HasPrefix(line, "|") && strings.HasSuffix(line, "|")
		if inTable && !isRow {
			b.WriteString("</table>\n")
			inTable = false
		}
		switch {
		case isRow:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
				continue // the separator row
			}
			if !inTable {
				b.WriteString("<table>\n")
				inTable, header = true, true
			}
			tag := "td"
			if header {
				tag = "th"
				header = false
			}
			b.WriteString("<tr>")
			for _, c := range cells {
				fmt.Fprintf(&b, "<%s>%s</%s>", tag, esc(strings.TrimSpace(c)), tag)
			}
			b.WriteString("</tr>\n")
		case strings.HasPrefix(line, "### "):
			fmt.Fprintf(&b, "<h3>%s</h3>\n", esc(strings.TrimPrefix(line, "### ")))
		case line != "":
			fmt.Fprintf(&b, "<p>%s</p>\n", esc(line))
		}
	}
	if inTable {
		b.WriteString("</table>\n")
	}
	return template.HTML(b.String())
}

// RunPageName is the file name of a run's page in a suite's runs/ directory: TASK_METHOD_seedN.html.
func RunPageName(r Run) string {
	return filepath.Clean(sanitize(taskLabel(r.Info)) + "_" + sanitize(r.Info.Method) + "_seed" + fmt.Sprint(r.Info.Seed) + ".html")
}

// pageStyle and pageScript are shared by both pages. The script writes each drawing's rendered size into its
// data-bbox attribute, so that a headless browser's DOM shows that the structures were drawn (the report's test
// reads it).
const pageStyle = `<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}th{background:#f3f3f3}
td:first-child,td:nth-child(2){text-align:left}
.mols{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:.8em}
.mol{border:1px solid #ddd;border-radius:6px;padding:.4em;background:#fff}
.mol svg{display:block;width:100%;height:auto}
.mol .score{font-weight:600}.mol .smiles{font-family:monospace;font-size:.75em;word-break:break-all;color:#444}.mol .from{font-size:.8em;color:#555}
.curves svg{max-width:100%;height:auto}
.note{color:#a40}
.mol.breaks{border:2px solid #c00}.mol .breaks{color:#c00;font-size:.8em}
</style>`

const pageScript = `<script>
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".mol .drawing svg").forEach(function (svg) {
    var b = svg.getBBox();
    svg.closest(".mol").setAttribute("data-bbox", Math.round(b.width) + "x" + Math.round(b.height));
  });
});
</script>`

var funcs = template.FuncMap{
	"style":    func() template.HTML { return template.HTML(pageStyle) },
	"script":   func() template.HTML { return template.HTML(pageScript) },
	"f3":       func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"f4":       func(v float64) string { return fmt.Sprintf("%.4f", v) },
	"breaking": breaking,
}

var runTmpl = template.Must(template.New("run").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nfbo · {{.Title}}</title>{{style}}</head>
<body>
<h1>{{.Title}}</h1>
{{if .Suite}}<p><a href="{{.Suite}}">← the suite</a></p>{{end}}
<p>{{.Status}}: {{.Fig.Calls}} of {{.Run.Info.Budget}} objective calls{{if .Run.Info.Initial}}, {{.Run.Info.Initial}} initial molecules{{end}}; {{printf "%.0f" .Run.Info.Seconds}} s of wall time.
Top-1 {{f4 (index .Fig.Top 0)}}, Top-10 {{f4 (index .Fig.Top 1)}}, Top-100 {{f4 (index .Fig.Top 2)}}; AUC Top-10 {{f4 (index .Fig.AUC 1)}}.</p>
{{if .Run.Info.Error}}<p class="note">Stopped: {{.Run.Info.Error}}</p>{{end}}
<div class="curves">{{.Curve}}</div>
<h2>Best molecules</h2>
{{with breaking .Molecules}}<p class="note">{{.}} of the molecules below break a rule of nfbo's default chemistry rules (marked in red: what a medicinal chemist would discard; runs made with -rules none may propose them).</p>{{end}}
{{if .Molecules}}<div class="mols">
{{range $i, $m := .Molecules}}<div class="mol{{if $m.Breaks}} breaks{{end}}" data-rank="{{$i}}">
<div class="drawing">{{if $m.SVG}}{{$m.SVG}}{{else}}<p class="note">(no drawing)</p>{{end}}</div>
<div><span class="score">{{f4 $m.Score}}</span> · call {{$m.Call}}{{if $m.Name}} · <span class="name">{{$m.Name}}</span>{{end}}</div>
{{if $m.From}}<div class="from">{{$m.From}}</div>{{end}}
<div class="smiles">{{$m.SMILES}}</div>
{{if $m.Breaks}}<div class="breaks">breaks the default rules: {{$m.Breaks}}</div>{{end}}
</div>
{{end}}</div>{{else}}<p>No molecule was scored yet.</p>{{end}}
{{script}}
</body></html>
`))

var suiteTmpl = template.Must(template.New("suite").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nfbo · {{.Title}}</title>{{style}}</head>
<body>
<h1>{{.Title}}</h1>
{{.Tables}}
{{if .Warnings}}<h2>Notes on the run directories</h2><ul>{{range .Warnings}}<li class="note">{{.}}</li>{{end}}</ul>{{end}}
<h2>Best score against objective calls</h2>
<div class="curves">{{range .Curves}}{{.}}{{end}}</div>
<h2>Runs</h2>
<table><tr><th>task</th><th>method</th><th>seed</th><th>setting</th><th>calls</th><th>Top-1</th><th>Top-10</th><th>AUC Top-10</th><th>status</th></tr>
{{range .Rows}}<tr><td>{{if .Link}}<a href="{{.Link}}">{{.Info.Task}}</a>{{else}}{{.Info.Task}}{{end}}</td><td>{{.Info.Method}}</td><td>{{.Info.Seed}}</td><td>{{.Info.Setting}}</td><td>{{.Fig.Calls}}</td><td>{{f3 (index .Fig.Top 0)}}</td><td>{{f3 (index .Fig.Top 1)}}</td><td>{{f3 (index .Fig.AUC 1)}}</td><td>{{.Status}}</td></tr>
{{end}}</table>
</body></html>
`))
