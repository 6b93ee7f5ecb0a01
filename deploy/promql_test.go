package deploy_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// targetLabels are the labels Prometheus adds to every series it scrapes:
// a query may use them though the exposition does not have them.
var targetLabels = []string{"job", "instance"}

// labelSet is a set of label names.
type labelSet map[string]bool

func (s labelSet) names() []string {
	var ns []string
	for n := range s {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// checker checks PromQL expressions against a scrape: every metric a
// selector names must be in it, and every label a query uses (matchers,
// by, without, on, ignoring, group_left/right, label_replace's source)
// must be one that metric has there (or one Prometheus adds, or one the
// query made itself with label_replace or label_join).
type checker struct {
	scrape scrape
	p      parser.Parser
	errs   []string
}

// check parses expr and returns the labels its result may have; what
// does not fit the scrape is added to c.errs, prefixed with where.
func (c *checker) check(where, expr string) (parser.Expr, labelSet) {
	e, err := c.p.ParseExpr(expr)
	if err != nil {
		c.errorf(where, "%v", err)
		return nil, labelSet{}
	}
	return e, c.labels(where, e)
}

func (c *checker) errorf(where, format string, args ...any) {
	c.errs = append(c.errs, where+": "+fmt.Sprintf(format, args...))
}

// labels returns the labels n's result may have, checking the labels n
// uses on the way.
func (c *checker) labels(where string, n parser.Node) labelSet {
	switch n := n.(type) {
	case *parser.VectorSelector:
		return c.selector(where, n)
	case *parser.MatrixSelector:
		return c.labels(where, n.VectorSelector)
	case *parser.SubqueryExpr:
		return c.labels(where, n.Expr)
	case *parser.ParenExpr:
		return c.labels(where, n.Expr)
	case *parser.UnaryExpr:
		return c.labels(where, n.Expr)
	case *parser.StepInvariantExpr:
		return c.labels(where, n.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return labelSet{}
	case *parser.Call:
		return c.call(where, n)
	case *parser.AggregateExpr:
		return c.aggregate(where, n)
	case *parser.BinaryExpr:
		return c.binary(where, n)
	default:
		c.errorf(where, "the test does not know the PromQL node %T (%s)", n, n)
		return labelSet{}
	}
}

// selector checks that the metric is in the scrape and has every label
// its matchers name.
func (c *checker) selector(where string, v *parser.VectorSelector) labelSet {
	if v.Name == "" {
		c.errorf(where, "selector %s names no metric: the test cannot check it", v)
		return labelSet{}
	}
	have, ok := c.scrape[v.Name]
	if !ok {
		c.errorf(where, "metric %s is not in the scrape", v.Name)
		return labelSet{}
	}
	out := labelSet{}
	for l := range have {
		out[l] = true
	}
	for _, l := range targetLabels {
		out[l] = true
	}
	for _, m := range v.LabelMatchers {
		if m.Name == "__name__" {
			continue
		}
		if !out[m.Name] {
			c.errorf(where, "metric %s has no label %s in the scrape (it has %s)", v.Name, m.Name, strings.Join(labelSet(have).names(), ", "))
		}
	}
	return out
}

// call handles the functions that change labels; the rest keep those of
// their vector argument.
func (c *checker) call(where string, f *parser.Call) labelSet {
	var in labelSet
	for _, a := range f.Args {
		l := c.labels(where, a)
		if in == nil && (a.Type() == parser.ValueTypeVector || a.Type() == parser.ValueTypeMatrix) {
			in = l
		}
	}
	if in == nil {
		in = labelSet{}
	}
	str := func(i int) string {
		if i < len(f.Args) {
			if s, ok := unparen(f.Args[i]).(*parser.StringLiteral); ok {
				return s.Val
			}
		}
		return ""
	}
	out := labelSet{}
	for l := range in {
		out[l] = true
	}
	switch f.Func.Name {
	case "label_replace": // (v, dst, replacement, src, regex)
		if src := str(3); src != "" && !in[src] {
			c.errorf(where, "label_replace reads label %s, which its argument does not have", src)
		}
		out[str(1)] = true
	case "label_join": // (v, dst, separator, src...)
		for i := 3; i < len(f.Args); i++ {
			if src := str(i); !in[src] {
				c.errorf(where, "label_join reads label %s, which its argument does not have", src)
			}
		}
		out[str(1)] = true
	case "histogram_quantile", "histogram_fraction":
		if !in["le"] {
			c.errorf(where, "%s of a series without le buckets", f.Func.Name)
		}
		delete(out, "le")
	case "vector", "scalar", "time", "absent", "absent_over_time":
		return labelSet{}
	}
	return out
}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

func (c *checker) aggregate(where string, a *parser.AggregateExpr) labelSet {
	in := c.labels(where, a.Expr)
	if a.Param != nil {
		c.labels(where, a.Param)
	}
	switch a.Op {
	case parser.TOPK, parser.BOTTOMK, parser.LIMITK, parser.LIMIT_RATIO:
		return in
	}
	out := labelSet{}
	if a.Without {
		for l := range in {
			out[l] = !slices.Contains(a.Grouping, l)
		}
	} else {
		for _, l := range a.Grouping {
			if !in[l] {
				c.errorf(where, "%s by %s: the series aggregated have no label %s (they have %s)",
					a.Op, l, l, strings.Join(in.names(), ", "))
			}
			out[l] = true
		}
	}
	if a.Op == parser.COUNT_VALUES {
		if s, ok := unparen(a.Param).(*parser.StringLiteral); ok {
			out[s.Val] = true
		}
	}
	return out
}

// binary follows what Prometheus does to labels: set operators keep the
// left side's (or adds the right's, for or); the others keep the vector
// side's against a scalar, and with one-to-one matching only the on
// labels, or the left side's less the ignoring ones.
func (c *checker) binary(where string, b *parser.BinaryExpr) labelSet {
	lhs, rhs := c.labels(where, b.LHS), c.labels(where, b.RHS)
	lVec := b.LHS.Type() == parser.ValueTypeVector
	rVec := b.RHS.Type() == parser.ValueTypeVector
	switch {
	case !lVec && !rVec:
		return labelSet{}
	case !rVec:
		return lhs
	case !lVec:
		return rhs
	}
	m := b.VectorMatching
	if m == nil {
		m = &parser.VectorMatching{Card: parser.CardOneToOne}
	}
	if m.On {
		for _, l := range m.MatchingLabels {
			for side, ls := range map[string]labelSet{"left": lhs, "right": rhs} {
				if !ls[l] {
					c.errorf(where, "%s on (%s): the %s side has no label %s", b.Op, strings.Join(m.MatchingLabels, ", "), side, l)
				}
			}
		}
	}
	one := rhs // group_left: the right side is the "one" side
	if m.Card == parser.CardOneToMany {
		one = lhs
	}
	for _, l := range m.Include {
		if !one[l] {
			c.errorf(where, "group_left/right (%s): the one side has no label %s", strings.Join(m.Include, ", "), l)
		}
	}
	out := labelSet{}
	switch {
	case b.Op == parser.LOR:
		for l := range lhs {
			out[l] = true
		}
		for l := range rhs {
			out[l] = true
		}
		return out
	case b.Op == parser.LAND || b.Op == parser.LUNLESS:
		return lhs
	}
	base := lhs
	if m.Card == parser.CardOneToMany {
		base = rhs
	}
	for l := range base {
		out[l] = true
	}
	if m.Card == parser.CardOneToOne {
		if m.On {
			out = labelSet{}
			for _, l := range m.MatchingLabels {
				out[l] = true
			}
		} else {
			for _, l := range m.MatchingLabels {
				delete(out, l)
			}
		}
	}
	for _, l := range m.Include {
		out[l] = true
	}
	return out
}
