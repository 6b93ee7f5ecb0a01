package harness

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Charts writes lateness.png (trickle lateness CDF per contestant),
// offer.png and drain.png (throughput bars) and backlog.png (cost against
// the backlog) to dir.
// A chart whose workload did not run (Config.Workloads) is not drawn.
func Charts(dir string, res *Results) error {
	charts := []struct {
		data int
		draw func(string, *Results) error
	}{
		{len(res.Trickle), latencyChart},
		{len(res.Offer), offerChart},
		{len(res.Burst), drainChart},
		{len(res.Backlog), backlogChart},
	}
	for _, c := range charts {
		if c.data == 0 {
			continue
		}
		if err := c.draw(dir, res); err != nil {
			return err
		}
	}
	return nil
}

func latencyChart(dir string, res *Results) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Trickle lateness (%d items over %v)", res.Config.TrickleN, res.Config.TrickleSpan)
	p.X.Label.Text = "arrival − due, ms (log; values under 0.01 ms drawn at 0.01)"
	p.Y.Label.Text = "fraction of items"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	for i, d := range res.Trickle {
		s := d.Lateness.Samples
		if len(s) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s))
		for j, v := range s {
			pts[j].X = math.Max(v, 0.01)
			pts[j].Y = float64(j+1) / float64(len(s))
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(d.Contestant, l)
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "lateness.png"))
}

func names(res *Results) []string {
	n := make([]string, len(res.Contestants))
	for i, c := range res.Contestants {
		n[i] = c.Name
	}
	return n
}

func offerChart(dir string, res *Results) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Offer throughput (%d items)", res.Config.OfferN)
	p.Y.Label.Text = "items/s"
	ns := names(res)
	series := []struct {
		label string
		match func(o OfferResult) bool
	}{
		{"1 producer", func(o OfferResult) bool { return o.Producers == 1 && !o.Batch }},
		{fmt.Sprintf("%d producers", res.Config.Producers), func(o OfferResult) bool { return o.Producers > 1 }},
		{"batch", func(o OfferResult) bool { return o.Batch }},
	}
	w := vg.Points(14)
	for si, s := range series {
		vals := make(plotter.Values, len(ns))
		for i, n := range ns {
			for _, o := range res.Offer {
				if o.Contestant == n && s.match(o) {
					vals[i] = o.PerSec
				}
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.Color = plotutil.Color(si)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(si-1)
		p.Add(b)
		p.Legend.Add(s.label, b)
	}
	p.Legend.Top = true
	p.NominalX(ns...)
	// Head room for the legend.
	top := 0.0
	for _, o := range res.Offer {
		top = math.Max(top, o.PerSec)
	}
	p.Y.Min, p.Y.Max = 0, top*1.25
	return p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, "offer.png"))
}

func drainChart(dir string, res *Results) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Burst drain rate (%d items due at once)", res.Config.BurstN)
	p.Y.Label.Text = "items/s (due → last arrival)"
	var ns []string
	var vals plotter.Values
	for _, d := range res.Burst {
		ns = append(ns, d.Contestant)
		vals = append(vals, d.DrainRate)
	}
	b, err := plotter.NewBarChart(vals, vg.Points(24))
	if err != nil {
		return err
	}
	b.Color = color.RGBA{R: 60, G: 110, B: 180, A: 255}
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(ns...)
	return p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, "drain.png"))
}

func backlogChart(dir string, res *Results) error {
	p := plot.New()
	p.Title.Text = "Cost against the backlog (solid: offer, dashed: cancel by id)"
	p.X.Label.Text = "pending items (log)"
	p.Y.Label.Text = "mean µs per call (log)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	for i, n := range names(res) {
		var off, can plotter.XYs
		for _, k := range res.Backlog {
			if k.Contestant != n {
				continue
			}
			if k.OfferMeanUs > 0 {
				off = append(off, plotter.XY{X: float64(k.Backlog), Y: k.OfferMeanUs})
			}
			if k.CancelMeanUs > 0 {
				can = append(can, plotter.XY{X: float64(k.Backlog), Y: k.CancelMeanUs})
			}
		}
		if len(off) > 0 {
			l, s, err := plotter.NewLinePoints(off)
			if err != nil {
				return err
			}
			l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
			p.Add(l, s)
			p.Legend.Add(n, l)
		}
		if len(can) > 0 {
			l, s, err := plotter.NewLinePoints(can)
			if err != nil {
				return err
			}
			l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			s.Shape = plotutil.Shape(1)
			p.Add(l, s)
		}
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, "backlog.png"))
}
