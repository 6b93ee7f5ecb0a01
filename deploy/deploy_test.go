package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

const (
	dashboardFile  = "grafana/redelay.json"
	alertsFile     = "prometheus/alerts.yml"
	alertTestsFile = "prometheus/alerts_test.yml"
	// queueLabel is the label that names the queue.
	queueLabel = "messaging_destination_name"
)

// grafanaVars are what the dashboard's variables and Grafana's own stand
// for when its queries are checked: queueVar is what the test puts where
// $queue is, so that it can tell the selectors that filter by it.
const queueVar = "queue-variable-value"

var grafanaVars = strings.NewReplacer(
	"${queue:regex}", queueVar, "${queue}", queueVar, "$queue", queueVar,
	"$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m",
	"$__range", "1h", "${__range}", "1h",
)

// TestDashboardAndAlertsMatchScrape runs a queue on a real Redis server
// with its metrics on the OpenTelemetry Prometheus exporter, scrapes them,
// and checks every query of the dashboard, the alerting rules and the
// rules' unit tests against that scrape: each metric they name must be
// there, with every label they match, group or join on, and each label a
// legend or an annotation prints must be on the query's result.
func TestDashboardAndAlertsMatchScrape(t *testing.T) {
	s, name := workedQueue(t)
	for _, m := range []string{"redelay_queue_depth", "redelay_messages_acked_total", "redelay_lateness_seconds_bucket"} {
		if !s[m][queueLabel] {
			t.Fatalf("the scrape has no %s with a %s label: the queue's label is not what the files assume (scrape: %v)", m, queueLabel, s)
		}
	}
	t.Logf("queue %s: %d metric names in the scrape", name, len(s))
	p := parser.NewParser(parser.Options{})

	t.Run("dashboard", func(t *testing.T) {
		c := &checker{scrape: s, p: p}
		d := readDashboard(t)
		if len(d.targets) == 0 {
			t.Fatal("no queries in the dashboard")
		}
		for _, q := range d.targets {
			expr := grafanaVars.Replace(q.expr)
			if strings.Contains(expr, "$") {
				c.errorf(q.where, "a variable the test does not know: %s", q.expr)
				continue
			}
			e, out := c.check(q.where, expr)
			if e == nil {
				continue
			}
			// Every selector is of the queues chosen in $queue.
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				if v, ok := n.(*parser.VectorSelector); ok && !filtersQueue(v) {
					c.errorf(q.where, "%s is not filtered by the queue variable (%s=~\"$queue\")", v, queueLabel)
				}
				return nil
			})
			for _, l := range legendLabels(q.legend) {
				if !out[l] {
					c.errorf(q.where, "legend %q prints label %s, which the query's result does not have (it has %s)", q.legend, l, strings.Join(out.names(), ", "))
				}
			}
		}
		for _, v := range d.labelValues {
			expr, label := v.selector, v.label
			if expr == "" {
				c.errorf(v.where, "label_values(%s) with no metric: the test cannot check it", label)
				continue
			}
			if _, out := c.check(v.where, expr); !out[label] {
				c.errorf(v.where, "label_values(%s, %s): no such label", expr, label)
			}
		}
		report(t, c.errs)
	})

	t.Run("alerts", func(t *testing.T) {
		c := &checker{scrape: s, p: p}
		for _, r := range readRules(t, p) {
			where := alertsFile + ": " + r.Alert
			_, out := c.check(where, r.Expr)
			for k, text := range r.Annotations {
				for _, l := range templateLabels(text) {
					if !out[l] {
						c.errorf(where, "annotation %s prints $labels.%s, which the expression's result does not have (it has %s)", k, l, strings.Join(out.names(), ", "))
					}
				}
			}
		}
		report(t, c.errs)
	})

	// The unit tests' input series are what a process exports.
	t.Run("alert tests", func(t *testing.T) {
		var errs []string
		for _, series := range readAlertTestSeries(t) {
			ls, _, err := p.ParseSeriesDesc(series)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: series %s: %v", alertTestsFile, series, err))
				continue
			}
			name := ls.Get("__name__")
			have, ok := s[name]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: metric %s is not in the scrape", alertTestsFile, name))
				continue
			}
			ls.Range(func(l labels.Label) {
				if l.Name != "__name__" && !have[l.Name] && !slices.Contains(targetLabels, l.Name) {
					errs = append(errs, fmt.Sprintf("%s: metric %s has no label %s in the scrape", alertTestsFile, name, l.Name))
				}
			})
		}
		report(t, errs)
	})
}

// filtersQueue reports whether v selects only the queues of the
// dashboard's queue variable.
func filtersQueue(v *parser.VectorSelector) bool {
	for _, m := range v.LabelMatchers {
		if m.Name == queueLabel && m.Value == queueVar {
			return true
		}
	}
	return false
}

func report(t *testing.T, errs []string) {
	t.Helper()
	for _, e := range errs {
		t.Error(e)
	}
}

// TestAlertRules checks that each rule says how bad it is and which
// queue: a severity label, and a summary and a description that name the
// queue.
func TestAlertRules(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	rules := readRules(t, p)
	if len(rules) == 0 {
		t.Fatal("no rules")
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Alert == "" {
			t.Errorf("%s: a recording rule (%s): the file holds alerts only", alertsFile, r.Record)
			continue
		}
		if seen[r.Alert] {
			t.Errorf("%s: two alerts named %s", alertsFile, r.Alert)
		}
		seen[r.Alert] = true
		if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
			t.Errorf("%s: %s has severity %q, want warning or critical", alertsFile, r.Alert, sev)
		}
		for _, k := range []string{"summary", "description"} {
			if !slices.Contains(templateLabels(r.Annotations[k]), queueLabel) {
				t.Errorf("%s: %s's %s does not name the queue ({{ $labels.%s }}): %q", alertsFile, r.Alert, k, queueLabel, r.Annotations[k])
			}
		}
	}
	for _, want := range []string{"RedelayQueueLatencyHigh", "RedelayDeadLettersGrowing", "RedelayQueuePaused", "RedelayLatenessHigh", "RedelayNoConsumers"} {
		if !seen[want] {
			t.Errorf("%s: no alert %s", alertsFile, want)
		}
	}
}

// TestPromtool runs Prometheus's own checks: promtool check rules, and the
// rules' unit tests (promtool test rules), which say when each alert fires.
// CI installs promtool (Debian's prometheus package, scripts/test.sh);
// elsewhere the test is skipped when it is missing.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed (scripts/test.sh installs Debian's prometheus package, which has it)")
		}
		t.Skip("promtool is not installed: apt-get install prometheus (Debian) to run it")
	}
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), bytes.TrimSpace(out))
	}
	run(".", "--version")
	run(".", "check", "rules", alertsFile)
	run("prometheus", "test", "rules", strings.TrimPrefix(alertTestsFile, "prometheus/"))
}

// TestDashboard checks what an import needs: a Prometheus data source
// chosen in a variable that every panel and query uses, a queue variable
// of the queues' label, and a panel for each thing to watch.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	vars := map[string]map[string]any{}
	for _, v := range d.raw.Templating.List {
		name, _ := v["name"].(string)
		vars[name] = v
	}
	if ds := vars["datasource"]; ds["type"] != "datasource" || ds["query"] != "prometheus" {
		t.Errorf("variable datasource is %v, want a data source variable of type prometheus", ds)
	}
	q := vars["queue"]
	if q["type"] != "query" || q["multi"] != true || q["includeAll"] != true {
		t.Errorf("variable queue is %v, want a query variable, multi-value, with All", q)
	}
	if len(d.labelValues) != 1 || d.labelValues[0].label != queueLabel {
		t.Errorf("the queue variable's query is %+v, want label_values(..., %s)", d.labelValues, queueLabel)
	}
	for _, ds := range d.datasources {
		if ds.uid != "${datasource}" || ds.typ != "prometheus" {
			t.Errorf("%s: data source %s/%s, want prometheus/${datasource}", ds.where, ds.typ, ds.uid)
		}
	}
	ids := map[float64]bool{}
	var titles []string
	for _, p := range d.raw.Panels {
		if ids[p.ID] {
			t.Errorf("two panels with id %v", p.ID)
		}
		ids[p.ID] = true
		titles = append(titles, p.Title)
	}
	for _, want := range []string{"Depth by state", "Lateness", "Latency", "Processed and failed", "Dead letters", "Paused"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q (panels: %q)", want, titles)
		}
	}
}

// dashboard is what the tests read of redelay.json.
type dashboard struct {
	raw struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []map[string]any `json:"list"`
		} `json:"templating"`
	}
	targets     []query
	labelValues []labelValues
	datasources []datasource
}

type panel struct {
	ID         float64        `json:"id"`
	Title      string         `json:"title"`
	Type       string         `json:"type"`
	Datasource *datasourceRef `json:"datasource"`
	Panels     []panel        `json:"panels"` // of a collapsed row
	Targets    []target       `json:"targets"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type target struct {
	RefID        string         `json:"refId"`
	Expr         string         `json:"expr"`
	LegendFormat string         `json:"legendFormat"`
	Datasource   *datasourceRef `json:"datasource"`
}

type query struct{ where, expr, legend string }

type labelValues struct{ where, selector, label string }

type datasource struct{ where, typ, uid string }

// labelValuesCall is Grafana's label_values([selector,] label).
var labelValuesCall = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*?)\s*,\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

func readDashboard(t *testing.T) *dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	d := &dashboard{}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d.raw); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("%s: more after the dashboard", dashboardFile)
	}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			where := fmt.Sprintf("%s: panel %q", dashboardFile, p.Title)
			d.datasources = append(d.datasources, dsOf(where, p.Datasource))
			if len(p.Targets) == 0 {
				t.Errorf("%s has no query", where)
			}
			for _, tg := range p.Targets {
				w := where + " query " + tg.RefID
				d.datasources = append(d.datasources, dsOf(w, tg.Datasource))
				d.targets = append(d.targets, query{w, tg.Expr, tg.LegendFormat})
			}
		}
	}
	walk(d.raw.Panels)
	for _, v := range d.raw.Templating.List {
		if v["type"] != "query" {
			continue
		}
		where := fmt.Sprintf("%s: variable %v", dashboardFile, v["name"])
		var ref datasourceRef
		if b, err := json.Marshal(v["datasource"]); err == nil {
			_ = json.Unmarshal(b, &ref)
		}
		d.datasources = append(d.datasources, dsOf(where, &ref))
		var q string
		switch x := v["query"].(type) {
		case string:
			q = x
		case map[string]any:
			q, _ = x["query"].(string)
		}
		m := labelValuesCall.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("%s: query %q is not label_values(...): the test cannot check it", where, q)
			continue
		}
		d.labelValues = append(d.labelValues, labelValues{where, m[1], m[2]})
	}
	return d
}

func dsOf(where string, r *datasourceRef) datasource {
	if r == nil {
		return datasource{where: where}
	}
	return datasource{where, r.Type, r.UID}
}

// legendLabels returns the labels a Grafana legend format prints:
// {{label}}.
func legendLabels(format string) []string {
	var ls []string
	for _, m := range regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`).FindAllStringSubmatch(format, -1) {
		ls = append(ls, m[1])
	}
	return ls
}

// templateLabels returns the labels an alert template prints:
// $labels.name or index $labels "name".
var templateLabel = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)|index\s+\$labels\s+"([^"]+)"`)

func templateLabels(text string) []string {
	var ls []string
	for _, m := range templateLabel.FindAllStringSubmatch(text, -1) {
		ls = append(ls, m[1]+m[2])
	}
	return ls
}

// rule is an alerting rule of alerts.yml.
type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// readRules reads alerts.yml, refusing fields Prometheus does not know,
// and parses each expression. (promtool check rules, in TestPromtool,
// checks the file as Prometheus loads it, templates included.)
func readRules(t *testing.T, p parser.Parser) []rule {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name     string `yaml:"name"`
			Interval string `yaml:"interval"`
			Rules    []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var rules []rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if _, err := p.ParseExpr(r.Expr); err != nil {
				t.Errorf("%s: %s: %v", alertsFile, r.Alert, err)
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: %s: for: %v", alertsFile, r.Alert, err)
				}
			}
			rules = append(rules, r)
		}
	}
	return rules
}

// readAlertTestSeries returns the input series of every test in
// alerts_test.yml.
func readAlertTestSeries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []struct {
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", alertTestsFile, err)
	}
	var series []string
	for _, tc := range f.Tests {
		for _, s := range tc.InputSeries {
			series = append(series, s.Series)
		}
	}
	if len(series) == 0 {
		t.Fatalf("%s: no input series", alertTestsFile)
	}
	return series
}
