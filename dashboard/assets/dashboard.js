// The dashboard's only script. It polls the JSON of the chart's data-src
// every 2 s, draws the depth of each state over time as an SVG line chart,
// keeps the counts on the page current, and derives rates of change per
// second between two samples. The server keeps no history: reloading the
// page starts the chart afresh. Without this script the pages work; only
// the chart and the rates are missing. It writes text only (textContent),
// never markup.
(function () {
  "use strict";

  var STATES = ["delayed", "retry", "ready", "inflight", "dead"];
  var INTERVAL_MS = 2000;
  var KEEP = 150; // samples kept: 5 minutes
  var SVG_NS = "http://www.w3.org/2000/svg";
  var W = 600, H = 180, LEFT = 48, RIGHT = 8, TOP = 10, BOTTOM = 20;

  var chart = document.querySelector("[data-chart]");
  if (!chart || !window.fetch) {
    return;
  }
  var src = chart.getAttribute("data-src");
  var status = chart.querySelector(".chart-status");
  var plot = chart.querySelector(".chart-plot");
  var samples = []; // {t: ms, totals: {state: n}}
  var previous = null; // {t: ms, byName: {name: queue}}

  var svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("class", "chart-svg");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "Depth by state over time");
  var note = plot.querySelector(".chart-nojs");
  if (note) {
    note.hidden = true;
  }
  plot.appendChild(svg);

  function setStatus(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function poll() {
    fetch(src, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (res) {
        if (!res.ok) {
          throw new Error("HTTP " + res.status);
        }
        return res.json();
      })
      .then(function (data) {
        update(data);
        setStatus("updated " + new Date().toLocaleTimeString());
      })
      .catch(function (err) {
        setStatus("update failed: " + err.message);
      })
      .then(function () {
        window.setTimeout(poll, INTERVAL_MS);
      });
  }

  function update(data) {
    var t = Date.parse(data.time);
    if (isNaN(t)) {
      t = Date.now();
    }
    var totals = {};
    // No prototype: a queue may be named __proto__ or constructor.
    var byName = Object.create(null);
    STATES.forEach(function (s) { totals[s] = 0; });
    (data.queues || []).forEach(function (q) {
      if (q.error) {
        return;
      }
      byName[q.name] = q;
      STATES.forEach(function (s) { totals[s] += q[s]; });
    });
    samples.push({ t: t, totals: totals });
    if (samples.length > KEEP) {
      samples.shift();
    }
    var dt = previous ? (t - previous.t) / 1000 : 0;
    updateRows(byName, dt);
    updateTabs(byName);
    previous = { t: t, byName: byName };
    draw();
  }

  // updateRows keeps the overview's rows current: counts, pause, latency
  // and the rates since the previous sample.
  function updateRows(byName, dt) {
    var rows = document.querySelectorAll('[data-testid="queue-row"]');
    var totals = {};
    STATES.forEach(function (s) { totals[s] = 0; });
    Array.prototype.forEach.call(rows, function (row) {
      var q = byName[row.getAttribute("data-queue")];
      if (!q) {
        return;
      }
      STATES.forEach(function (s) {
        setText(row, "count-" + s, String(q[s]));
        totals[s] += q[s];
      });
      setText(row, "latency", formatMS(q.latency_ms));
      setText(row, "next-due", q.next_due ? formatRel(Date.parse(q.next_due) - Date.now()) : "\u2014");
      setPaused(row, q.paused);
      var p = previous && previous.byName[q.name];
      if (p && dt > 0) {
        setText(row, "rate-ready", formatRate((q.ready - p.ready) / dt));
        setText(row, "rate-dead", formatRate((q.dead - p.dead) / dt));
      }
    });
    var foot = document.querySelector('[data-testid="totals"]');
    if (foot && rows.length > 0) {
      STATES.forEach(function (s) { setText(foot, "total-" + s, String(totals[s])); });
    }
  }

  // updateTabs keeps a queue page's tab counts current.
  function updateTabs(byName) {
    var names = Object.keys(byName);
    if (names.length !== 1) {
      return;
    }
    var q = byName[names[0]];
    STATES.forEach(function (s) {
      var el = document.querySelector('[data-live-count="' + s + '"]');
      if (el) {
        el.textContent = String(q[s]);
      }
    });
  }

  function setText(scope, testid, text) {
    var el = scope.querySelector('[data-testid="' + testid + '"]');
    if (el && el.textContent !== text) {
      el.textContent = text;
    }
  }

  // setPaused shows the paused badge in the row's status cell only while
  // the queue is paused.
  function setPaused(row, paused) {
    var cell = row.querySelector(".status");
    var badge = row.querySelector('[data-testid="paused"]');
    if (!cell || Boolean(badge) === Boolean(paused)) {
      return;
    }
    while (cell.firstChild) {
      cell.removeChild(cell.firstChild);
    }
    var span = document.createElement("span");
    if (paused) {
      span.className = "badge paused";
      span.setAttribute("data-testid", "paused");
      span.textContent = "paused";
    } else {
      span.className = "muted";
      span.textContent = "running";
    }
    cell.appendChild(span);
  }

  function formatRate(r) {
    if (!isFinite(r) || Math.abs(r) < 0.005) {
      return "0";
    }
    var s = Math.abs(r) >= 100 ? r.toFixed(0) : r.toFixed(2);
    return (r > 0 ? "+" : "") + s;
  }

  // formatRel writes a time ms from now as the server renders it.
  function formatRel(ms) {
    if (isNaN(ms)) {
      return "\u2014";
    }
    return ms < 0 ? formatMS(-ms) + " ago" : "in " + formatMS(ms);
  }

  function formatMS(ms) {
    if (!ms) {
      return "0s";
    }
    if (ms < 1000) {
      return Math.round(ms) + "ms";
    }
    if (ms < 60000) {
      return (ms / 1000).toFixed(1) + "s";
    }
    var s = Math.round(ms / 1000);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    return (h ? h + "h" : "") + (h || m ? m + "m" : "") + (s % 60) + "s";
  }

  // niceMax rounds n up to 1, 2 or 5 times a power of ten.
  function niceMax(n) {
    if (n <= 1) {
      return 1;
    }
    var p = Math.pow(10, Math.floor(Math.log10(n)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * p >= n) {
        return steps[i] * p;
      }
    }
    return 10 * p;
  }

  function el(name, attrs, text) {
    var e = document.createElementNS(SVG_NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  function draw() {
    while (svg.firstChild) {
      svg.removeChild(svg.firstChild);
    }
    var max = 0;
    samples.forEach(function (s) {
      STATES.forEach(function (k) { max = Math.max(max, s.totals[k]); });
    });
    max = niceMax(max);
    var plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
    var t1 = samples[samples.length - 1].t;
    var span = Math.max(samples[0] ? t1 - samples[0].t : 0, INTERVAL_MS * 10);
    var t0 = t1 - span;
    function x(t) { return LEFT + ((t - t0) / span) * plotW; }
    function y(v) { return TOP + plotH - (v / max) * plotH; }

    [0, 0.5, 1].forEach(function (f) {
      var yy = y(f * max);
      svg.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: yy, y2: yy, "class": "grid-line" }));
      svg.appendChild(el("text", { x: LEFT - 6, y: yy + 3, "text-anchor": "end", "class": "axis-label" }, String(f * max)));
    });
    svg.appendChild(el("text", { x: LEFT, y: H - 4, "class": "axis-label" }, "−" + Math.round(span / 1000) + "s"));
    svg.appendChild(el("text", { x: W - RIGHT, y: H - 4, "text-anchor": "end", "class": "axis-label" }, "now"));

    STATES.forEach(function (k) {
      var points = samples.map(function (s) {
        return x(s.t).toFixed(1) + "," + y(s.totals[k]).toFixed(1);
      }).join(" ");
      var line = el("polyline", { points: points, "class": "s-" + k });
      line.appendChild(el("title", {}, k + ": " + samples[samples.length - 1].totals[k]));
      svg.appendChild(line);
    });
  }

  poll();
})();
