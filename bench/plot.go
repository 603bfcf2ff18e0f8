package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// palette is colour-blind safe (Okabe–Ito).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
}

// WritePlots writes, for every setting and task, the best score against
// objective calls with one line per method (the mean over seeds) and a
// shaded band of ± one standard error, as PNG and SVG files named
// SETTING_TASK.{png,svg} in dir. It returns the files written.
func WritePlots(dir string, runs []Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	plots, err := taskPlots(runs)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, tp := range plots {
		base := filepath.Join(dir, sanitize(tp.setting)+"_"+sanitize(tp.task))
		for _, ext := range []string{".png", ".svg"} {
			if err := tp.p.Save(6*vg.Inch, 4*vg.Inch, base+ext); err != nil {
				return files, fmt.Errorf("bench: save plot %s: %w", base+ext, err)
			}
			files = append(files, base+ext)
		}
	}
	return files, nil
}

// taskPlot is the plot of one setting and task.
type taskPlot struct {
	setting, task string
	p             *plot.Plot
}

// taskPlots returns, for every setting and task in the order of runs, the best score against objective calls
// with one line per method (the mean over seeds) and a band of ± one standard error. Runs read from a runs.tsv
// have no curve and are left out.
func taskPlots(runs []Run) ([]taskPlot, error) {
	type key struct{ setting, task string }
	byTask := map[key]map[string][]Run{}
	var order []key
	for _, r := range runs {
		if r.row != nil {
			continue // a runs.tsv row has no curve
		}
		k := key{r.Info.Setting, taskLabel(r.Info)}
		if byTask[k] == nil {
			byTask[k] = map[string][]Run{}
			order = append(order, k)
		}
		byTask[k][r.Info.Method] = append(byTask[k][r.Info.Method], r)
	}
	var out []taskPlot
	for _, k := range order {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s (%s)", k.task, k.setting)
		p.X.Label.Text = "objective calls"
		p.Y.Label.Text = "best score"
		p.Add(plotter.NewGrid())
		methods := map[string]bool{}
		var all []Run
		for m, rs := range byTask[k] {
			methods[m] = true
			all = append(all, rs...)
		}
		lo, hi, calls := math.Inf(1), math.Inf(-1), 0
		if best, ok := bestInitial(all); ok {
			// The line every method starts from: what the optimiser has to beat.
			line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: best}, {X: float64(maxCalls(all)), Y: best}})
			if err != nil {
				return nil, err
			}
			line.Color, line.Width, line.Dashes = color.Gray{Y: 90}, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("best initial (%.3f)", best), line)
			lo, hi = best, best
		}
		for i, m := range sortedKeys(methods) {
			mean, se := meanCurve(byTask[k][m])
			c := palette[i%len(palette)]
			band, err := bandPolygon(mean, se, c)
			if err != nil {
				return nil, err
			}
			line, err := plotter.NewLine(curveXYs(mean))
			if err != nil {
				return nil, err
			}
			line.Color, line.Width = c, vg.Points(1.5)
			p.Add(band, line)
			p.Legend.Add(fmt.Sprintf("%s (n=%d)", m, len(byTask[k][m])), line)
			for j, v := range mean {
				lo, hi = min(lo, v-se[j]), max(hi, v+se[j])
			}
			calls = max(calls, len(mean)-1)
		}
		// Best-so-far curves are highest at the right, so the lower right is kept free for the legend: the y
		// axis starts a third of the data's range below it. The x axis ends past the last call, so the last tick's
		// label is not cut at the edge.
		if hi > lo {
			p.Y.Min, p.Y.Max = lo-0.35*(hi-lo), hi+0.05*(hi-lo)
		}
		p.X.Min, p.X.Max = 0, float64(calls)*1.04
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.XOffs, p.Legend.YOffs = -vg.Points(4), vg.Points(4)
		out = append(out, taskPlot{k.setting, k.task, p})
	}
	return out, nil
}

// meanCurve returns the mean best-so-far curve over runs and its standard
// error; a run shorter than the longest holds its last value.
func meanCurve(runs []Run) (mean, se []float64) {
	var curves [][]float64
	n := 0
	for _, r := range runs {
		c := r.BestCurve()
		curves = append(curves, c)
		n = max(n, len(c))
	}
	mean, se = make([]float64, n), make([]float64, n)
	vals := make([]float64, len(curves))
	for i := 0; i < n; i++ {
		for j, c := range curves {
			vals[j] = c[min(i, len(c)-1)]
		}
		m, s := meanStd(vals)
		mean[i], se[i] = m, s/math.Sqrt(float64(len(vals)))
	}
	return mean, se
}

func curveXYs(y []float64) plotter.XYs {
	xys := make(plotter.XYs, len(y))
	for i, v := range y {
		xys[i] = plotter.XY{X: float64(i), Y: v}
	}
	return xys
}

// bandPolygon returns the filled region mean ± se in a light tint of c.
func bandPolygon(mean, se []float64, c color.Color) (*plotter.Polygon, error) {
	pts := make(plotter.XYs, 0, 2*len(mean))
	for i := range mean {
		pts = append(pts, plotter.XY{X: float64(i), Y: mean[i] + se[i]})
	}
	for i := len(mean) - 1; i >= 0; i-- {
		pts = append(pts, plotter.XY{X: float64(i), Y: mean[i] - se[i]})
	}
	poly, err := plotter.NewPolygon(pts)
	if err != nil {
		return nil, err
	}
	r, g, b, _ := c.RGBA()
	poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 60}
	poly.LineStyle.Width = 0
	poly.LineStyle.Color = color.Transparent
	return poly, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r == '+':
			return 'p'
		}
		return '_'
	}, s)
}

// bestInitial returns the best initial gain of runs (from the data file, or the first InitialCalls paid calls),
// and whether any run knows one.
func bestInitial(runs []Run) (float64, bool) {
	best, ok := math.Inf(-1), false
	for _, r := range runs {
		for _, g := range r.initialGains() {
			best, ok = max(best, g), true
		}
		for _, g := range r.Scores[:min(r.Info.InitialCalls, len(r.Scores))] {
			best, ok = max(best, g), true
		}
	}
	return best, ok
}

// maxCalls returns the most paid calls of runs.
func maxCalls(runs []Run) int {
	n := 0
	for _, r := range runs {
		n = max(n, len(r.Scores))
	}
	return n
}
