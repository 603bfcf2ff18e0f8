package pretrain

import (
	"bufio"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nfbo/nfbo/engine/train"
)

// Okabe–Ito colours, as in package bench's plots.
var (
	curveTrainColor = color.RGBA{0, 114, 178, 255} // blue
	curveValColor   = color.RGBA{213, 94, 0, 255}  // vermillion
)

// WriteCurves draws the NLL and similarity panels of the points with
// step ≥ from and writes them to PREFIX.png and PREFIX.svg; it returns the
// files written.
func WriteCurves(prefix, title string, lg *train.Log, from int64) ([]string, error) {
	var pts []train.LogPoint
	for _, p := range lg.Points {
		if p.Step >= from {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("no steps ≥ %d to plot (the last is %d)", from, lg.Points[len(lg.Points)-1].Step)
	}
	xLabel := "optimiser step"
	switch {
	case lg.Batch > 0 && lg.Consistent:
		xLabel = fmt.Sprintf("optimiser step (batch %d)", lg.Batch)
	case lg.Batch > 0:
		xLabel = "optimiser step (batch size changed between resumes)"
	}
	nll, err := curvePanel(pts, func(p train.LogPoint) (float64, float64) { return p.NLL, p.ValNLL }, "NLL per token (nats)")
	if err != nil {
		return nil, err
	}
	sim, err := curvePanel(pts, func(p train.LogPoint) (float64, float64) { return p.Sim, p.ValSim }, "similarity loss per token")
	if err != nil {
		return nil, err
	}
	nll.Title.Text = "SeqFlow pretraining: " + title
	sim.X.Label.Text = xLabel
	// The same step range on both panels, so they read as one x-axis.
	lo, hi := float64(pts[0].Step), float64(pts[len(pts)-1].Step)
	for _, p := range []*plot.Plot{nll, sim} {
		p.X.Min, p.X.Max = lo, hi
		p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	}
	var files []string
	for _, ext := range []string{"png", "svg"} {
		c, err := draw.NewFormattedCanvas(7*vg.Inch, 7*vg.Inch, ext)
		if err != nil {
			return files, err
		}
		dc := draw.New(c)
		tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4),
			PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		cs := plot.Align([][]*plot.Plot{{nll}, {sim}}, tiles, dc)
		nll.Draw(cs[0][0])
		sim.Draw(cs[1][0])
		name := prefix + "." + ext
		if err := writeTo(name, c); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}

// curvePanel returns a plot of the training value of every point (thin
// line) and the validation value of the validated points (points and line);
// get returns the training and validation values of a point.
func curvePanel(pts []train.LogPoint, get func(train.LogPoint) (train, val float64), yLabel string) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	// The losses fall to the right, so the upper right is the emptiest corner.
	p.Legend.Top = true
	var tr, va plotter.XYs
	for _, q := range pts {
		t, v := get(q)
		tr = append(tr, plotter.XY{X: float64(q.Step), Y: t})
		if q.HasVal {
			va = append(va, plotter.XY{X: float64(q.Step), Y: v})
		}
	}
	line, err := plotter.NewLine(tr)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = curveTrainColor, vg.Points(0.75)
	p.Add(line)
	p.Legend.Add("training (batch, per logged step)", line)
	if len(va) > 0 {
		vl, vs, err := plotter.NewLinePoints(va)
		if err != nil {
			return nil, err
		}
		vl.Color, vl.Width = curveValColor, vg.Points(1.5)
		vs.Color, vs.Shape, vs.Radius = curveValColor, draw.CircleGlyph{}, vg.Points(3)
		p.Add(vl, vs)
		p.Legend.Add("validation (held-out set)", vl, vs)
	}
	return p, nil
}

// niceTicks marks an axis at multiples of 1, 2, 2.5 or 5 times a power of
// ten, at most 8 labelled, with as many decimals as that spacing needs
// (plot.DefaultTicks writes "250.00" on a step axis).
type niceTicks struct{}

// Ticks returns the ticks for the range [lo, hi]: labelled majors and an
// unlabelled minor halfway between each pair.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	r := hi - lo
	if !(r > 0) || math.IsInf(r, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	exp := math.Floor(math.Log10(r))
	var d float64
	for _, m := range []float64{0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10} {
		d = m * math.Pow(10, exp)
		if r/d <= 8 {
			break
		}
	}
	dexp := math.Floor(math.Log10(d) + 1e-9)
	dec := max(0, int(-dexp))
	if mant := d / math.Pow(10, dexp); dexp <= 0 && math.Abs(mant-2.5) < 1e-9 {
		dec++ // 0.25, 2.5
	}
	var ticks []plot.Tick
	for k := int64(math.Ceil(lo/d - 0.5)); float64(k)*d-d/2 <= hi; k++ {
		if v := float64(k) * d; v >= lo && v <= hi {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
		}
		if v := (float64(k) - 0.5) * d; v >= lo && v <= hi {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// writeTo writes w to the file name.
func writeTo(name string, w io.WriterTo) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return f.Close()
}

// WriteValTable writes the validation rows of lg as a Markdown table with a
// note on its columns.
func WriteValTable(w io.Writer, lg *train.Log) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| step | epoch | sequences seen | train loss | train NLL/token | train sim/token | val NLL/token | val sim/token |")
	fmt.Fprintln(bw, "|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, p := range lg.Points {
		if !p.HasVal {
			continue
		}
		seen := "–"
		if n, ok := lg.SeqsSeen(p); ok {
			seen = strconv.FormatInt(n, 10)
		}
		fmt.Fprintf(bw, "| %d | %d | %s | %.4f | %.4f | %.4f | %.4f | %.4f |\n",
			p.Step, p.Epoch, seen, p.Loss, p.NLL, p.Sim, p.ValNLL, p.ValSim)
	}
	fmt.Fprintln(bw)
	if lg.Consistent && lg.Batch > 0 {
		fmt.Fprintf(bw, "Sequences seen: each epoch visits the %d training sequences in batches of %d, the last batch partial.\n", lg.TrainSize, lg.Batch)
	} else {
		fmt.Fprintln(bw, "Sequences seen: unknown (no header line, or the batch size or training set changed between resumes).")
	}
	fmt.Fprintln(bw, "Train values are those of the step's batch; validation values are on the held-out set after the step. NLL in nats per token; the loss is per sequence (NLL plus similarity loss, summed over its tokens).")
	return bw.Flush()
}
