// The dashboard's only script. Every page names, in its body's data-live,
// the JSON of the stats it shows; the script polls it every 2 s to keep
// the counts current, and says so at the top of the page as soon as a
// refresh fails: since when, with the figures greyed and every action
// disabled until a refresh succeeds again. Where there are charts, it
// draws the processed and failed items per minute that Redis counted
// (api/history, polled every 15 s, which also gives the per-minute
// figures of the last complete minute), and the depth of each state over
// the samples this page took. Without this script the pages work; only
// the live figures, the per-minute figures and the charts are missing,
// and a box that ticks every item listed. It writes text only
// (textContent), never markup.
(function () {
  "use strict";

  var STATES = ["delayed", "retry", "ready", "inflight", "dead"];
  var INTERVAL_MS = 2000;
  var HISTORY_MS = 15000;
  var TIMEOUT_MS = 10000; // a refresh that takes longer has failed
  var KEEP = 150; // samples kept: 5 minutes
  var SVG_NS = "http://www.w3.org/2000/svg";
  // A chart's drawing is as wide as its box, in CSS pixels (W, set when it
  // is drawn), so that its labels keep their size on a phone.
  var W = 600, H = 180, LEFT = 48, RIGHT = 8, TOP = 10, BOTTOM = 20;

  // fit sizes svg's drawing to its box.
  function fit(svg) {
    var w = svg.parentNode ? svg.parentNode.clientWidth : 0;
    W = Math.max(280, Math.min(900, Math.round(w || 600)));
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  }

  var body = document.body;

  // ---- Selecting items for a bulk action: a box that ticks every row's,
  // and how many are ticked. Without script each box is ticked by hand.
  (function () {
    var all = document.querySelector('[data-testid="select-all"]');
    var boxes = document.querySelectorAll('input[type="checkbox"][form="bulk"]');
    var shown = document.querySelector('[data-testid="selected-count"]');
    if (!all || boxes.length === 0) {
      return;
    }
    function count() {
      var n = 0;
      Array.prototype.forEach.call(boxes, function (b) { n += b.checked ? 1 : 0; });
      all.checked = n === boxes.length;
      all.indeterminate = n > 0 && n < boxes.length;
      if (shown) {
        shown.textContent = " (" + n + ")";
        shown.hidden = n === 0;
      }
    }
    all.hidden = false;
    all.addEventListener("change", function () {
      Array.prototype.forEach.call(boxes, function (b) {
        if (!b.disabled) {
          b.checked = all.checked;
        }
      });
      count();
    });
    Array.prototype.forEach.call(boxes, function (b) { b.addEventListener("change", count); });
    count();
  })();

  var src = body.getAttribute("data-live");
  if (!src || !window.fetch) {
    return;
  }
  var liveURL = new URL(src, document.baseURI);
  var single = liveURL.searchParams.get("q"); // the queue of a page of one; null on the overview

  // ---- Controls: blocked while the figures are stale, or for a queue
  // that is gone. An element is enabled again only when no reason holds.

  var REASONS = ["stale", "gone"];
  var CONTROLS = 'form[method="post"] button, form[method="post"] input:not([type="hidden"]), ' +
    'form[method="post"] select, form[method="post"] textarea, button[form], input[form], a[data-action]';

  function block(scope, why) {
    Array.prototype.forEach.call(scope.querySelectorAll(CONTROLS), function (el) {
      var mine = REASONS.some(function (r) { return el.hasAttribute("data-off-" + r); });
      if (!mine && (el.disabled || el.getAttribute("aria-disabled") === "true")) {
        return; // disabled by the page itself: not ours to enable
      }
      el.setAttribute("data-off-" + why, "");
      if (el.tagName === "A") {
        el.setAttribute("aria-disabled", "true");
        el.setAttribute("tabindex", "-1");
      } else {
        el.disabled = true;
      }
    });
  }

  function unblock(scope, why) {
    Array.prototype.forEach.call(scope.querySelectorAll("[data-off-" + why + "]"), function (el) {
      el.removeAttribute("data-off-" + why);
      if (REASONS.some(function (r) { return el.hasAttribute("data-off-" + r); })) {
        return;
      }
      if (el.tagName === "A") {
        el.removeAttribute("aria-disabled");
        el.removeAttribute("tabindex");
      } else {
        el.disabled = false;
      }
    });
  }

  // A blocked link goes nowhere.
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("a[aria-disabled='true']");
    if (a) {
      ev.preventDefault();
    }
  }, true);

  // ---- Staleness: the banner at the top, from the first failed refresh
  // to the next one that succeeds.

  var banner = document.querySelector('[data-testid="stale"]');
  var staleSince = null;

  function clock(d) {
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }

  // markStale says why the figures stopped being current: failure is
  // {status: HTTP status} or {network: true}.
  function markStale(failure) {
    if (staleSince === null) {
      staleSince = new Date();
      body.classList.add("stale");
      block(document, "stale");
    }
    var what;
    if (failure.network) {
      what = "The dashboard is unreachable";
    } else if (failure.status >= 500) {
      what = "Redis unreachable";
    } else {
      what = "Refreshing fails (HTTP " + failure.status + ")";
    }
    if (banner) {
      banner.textContent = what + " since " + clock(staleSince) + " \u2014 figures below are from then";
      banner.hidden = false;
    }
  }

  function markFresh() {
    if (staleSince === null) {
      return;
    }
    staleSince = null;
    body.classList.remove("stale");
    unblock(document, "stale");
    if (banner) {
      banner.hidden = true;
      banner.textContent = "";
    }
  }

  // ---- Polling.

  function poll() {
    var ctl = window.AbortController ? new AbortController() : null;
    var timer = ctl ? window.setTimeout(function () { ctl.abort(); }, TIMEOUT_MS) : 0;
    fetch(src, {
      credentials: "same-origin",
      cache: "no-store",
      headers: { Accept: "application/json" },
      signal: ctl ? ctl.signal : undefined
    })
      .then(function (res) {
        if (res.status === 404) {
          return { gone: true };
        }
        if (!res.ok) {
          return { failure: { status: res.status } };
        }
        return res.json().then(function (data) { return { data: data }; });
      }, function () {
        return { failure: { network: true } };
      })
      .then(function (got) {
        if (got.failure) {
          markStale(got.failure);
          setStatus("update failed");
          return;
        }
        markFresh();
        if (got.gone) {
          queueGone();
        } else {
          update(got.data);
        }
        setStatus("updated " + clock(new Date()));
      })
      .catch(function () {
        markStale({ network: true }); // a body that is not the JSON
      })
      .then(function () {
        window.clearTimeout(timer);
        window.setTimeout(poll, INTERVAL_MS);
      });
  }

  // ---- What a refresh updates.

  var chart = document.querySelector("[data-chart]");
  var status = chart && chart.querySelector(".chart-status");

  function setStatus(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function update(data) {
    var t = Date.parse(data.time);
    if (isNaN(t)) {
      t = Date.now();
    }
    // No prototype: a queue may be named __proto__ or constructor.
    var byName = Object.create(null);
    (data.queues || []).forEach(function (q) {
      byName[q.name] = q;
    });
    updateRows(byName);
    updateQueue(byName);
    addSample(t, byName);
  }

  // updateRows keeps the overview's rows current: counts, pause, latency,
  // processed and failed. A queue no longer in the answer is gone from
  // Redis: its row says so, without the old figures, and its actions are
  // disabled. Queues that appeared are named above the table.
  function updateRows(byName) {
    if (single !== null) {
      return;
    }
    var rows = document.querySelectorAll('[data-testid="queue-row"]');
    var totals = { processed: 0, failed: 0 };
    var shown = Object.create(null);
    STATES.forEach(function (s) { totals[s] = 0; });
    Array.prototype.forEach.call(rows, function (row) {
      var name = row.getAttribute("data-queue");
      shown[name] = true;
      var q = byName[name];
      if (!q) {
        rowGone(row);
        return;
      }
      rowBack(row);
      if (q.error) {
        return;
      }
      STATES.concat(["processed", "failed"]).forEach(function (s) {
        setText(row, s === "processed" || s === "failed" ? s : "count-" + s, String(q[s]));
        totals[s] += q[s];
      });
      setText(row, "latency", formatMS(q.latency_ms));
      setText(row, "next-due", q.next_due ? formatRel(Date.parse(q.next_due) - Date.now()) : "\u2014");
      setPaused(row, q.paused);
    });
    var foot = document.querySelector('[data-testid="totals"]');
    if (foot) {
      STATES.concat(["processed", "failed"]).forEach(function (s) { setText(foot, "total-" + s, String(totals[s])); });
    }
    var added = Object.keys(byName).filter(function (n) { return !shown[n]; }).sort();
    var note = document.querySelector('[data-testid="new-queues"]');
    if (note) {
      note.hidden = added.length === 0;
      setText(note, "new-queue-names", added.join(", "));
    }
  }

  function rowGone(row) {
    if (row.classList.contains("gone")) {
      return;
    }
    row.classList.add("gone");
    STATES.forEach(function (s) { setText(row, "count-" + s, "\u2014"); });
    ["latency", "next-due", "processed", "failed", "processed-rate", "failed-rate"].forEach(function (id) {
      setText(row, id, "\u2014");
    });
    var cell = row.querySelector(".status");
    if (cell) {
      replaceText(cell, "badge gone", "gone", "gone from Redis");
    }
    block(row, "gone");
  }

  function rowBack(row) {
    if (!row.classList.contains("gone")) {
      return;
    }
    row.classList.remove("gone");
    var cell = row.querySelector(".status");
    if (cell) {
      replaceText(cell, "muted", "", "running");
    }
    unblock(row, "gone");
  }

  // updateQueue keeps a page of one queue current: its tab counts and
  // latency.
  function updateQueue(byName) {
    var q = single !== null && byName[single];
    if (!q) {
      return;
    }
    queueBack();
    if (q.error) {
      return;
    }
    STATES.forEach(function (s) {
      var el = document.querySelector('[data-live-count="' + s + '"]');
      if (el) {
        el.textContent = String(q[s]);
      }
    });
    setText(document, "latency", formatMS(q.latency_ms));
    setText(document, "processed", String(q.processed));
    setText(document, "failed", String(q.failed));
  }

  // queueGone says, on a page of one queue, that the queue is no longer
  // in Redis (its JSON answers 404): after a restart without its data, or
  // a purge of its last items and keys.
  var goneNote = document.querySelector('[data-testid="gone"]');
  function queueGone() {
    if (body.classList.contains("gone")) {
      return;
    }
    body.classList.add("gone");
    if (goneNote) {
      goneNote.textContent = "Queue \u201c" + single + "\u201d is not in Redis any more (since " + clock(new Date()) +
        "): what this page shows is gone, and its actions are disabled.";
      goneNote.hidden = false;
    }
    Array.prototype.forEach.call(document.querySelectorAll("[data-live-count]"), function (el) {
      el.textContent = "\u2014";
    });
    ["latency", "processed", "failed", "processed-rate", "failed-rate"].forEach(function (id) {
      setText(document, id, "\u2014");
    });
    block(document, "gone");
  }

  function queueBack() {
    if (!body.classList.contains("gone")) {
      return;
    }
    body.classList.remove("gone");
    if (goneNote) {
      goneNote.hidden = true;
      goneNote.textContent = "";
    }
    unblock(document, "gone");
  }

  function setText(scope, testid, text) {
    var el = scope.querySelector('[data-testid="' + testid + '"]');
    if (el && el.textContent !== text) {
      el.textContent = text;
    }
  }

  // replaceText replaces what cell holds with one span of text.
  function replaceText(cell, className, testid, text) {
    while (cell.firstChild) {
      cell.removeChild(cell.firstChild);
    }
    var span = document.createElement("span");
    span.className = className;
    if (testid) {
      span.setAttribute("data-testid", testid);
    }
    span.textContent = text;
    cell.appendChild(span);
  }

  // setPaused shows the paused badge in the row's status cell only while
  // the queue is paused.
  function setPaused(row, paused) {
    var cell = row.querySelector(".status");
    var badge = row.querySelector('[data-testid="paused"]');
    if (!cell || Boolean(badge) === Boolean(paused)) {
      return;
    }
    if (paused) {
      replaceText(cell, "badge paused", "paused", "paused");
    } else {
      replaceText(cell, "muted", "", "running");
    }
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

  // ---- The depth chart: the samples this page took.

  var samples = []; // {t: ms, totals: {state: n}}
  // chartSVG puts an empty chart, labelled label, in the plot of the
  // chart element el, hiding what the plot says without script.
  function chartSVG(el, label) {
    var s = document.createElementNS(SVG_NS, "svg");
    s.setAttribute("viewBox", "0 0 " + W + " " + H);
    s.setAttribute("class", "chart-svg");
    s.setAttribute("role", "img");
    s.setAttribute("aria-label", label);
    var plot = el.querySelector(".chart-plot");
    var nojs = plot.querySelector(".chart-nojs");
    if (nojs) {
      nojs.hidden = true;
    }
    plot.appendChild(s);
    return s;
  }

  var svg = chart ? chartSVG(chart, "Depth by state over time") : null;

  function addSample(t, byName) {
    if (!svg) {
      return;
    }
    var totals = {};
    STATES.forEach(function (s) { totals[s] = 0; });
    Object.keys(byName).forEach(function (name) {
      var q = byName[name];
      if (!q.error) {
        STATES.forEach(function (s) { totals[s] += q[s]; });
      }
    });
    samples.push({ t: t, totals: totals });
    if (samples.length > KEEP) {
      samples.shift();
    }
    draw();
  }

  // niceMax rounds n up to 1, 2 or 5 times a power of ten, 2 at least:
  // half of it, a grid line, is a whole count.
  function niceMax(n) {
    if (n <= 2) {
      return 2;
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
    fit(svg);
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
    svg.appendChild(el("text", { x: LEFT, y: H - 4, "class": "axis-label" }, "\u2212" + Math.round(span / 1000) + "s"));
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

  // ---- The history: processed and failed items per minute, as Redis
  // counted them.

  var hist = document.querySelector("[data-history]");
  var histMinutes = 60;
  var histTimer = 0;
  var histSeq = 0; // answers to a request made before the range changed are dropped
  var histSVG = null;
  if (hist) {
    histSVG = chartSVG(hist, "Processed and failed items per minute");
    var ranges = hist.querySelector(".ranges");
    if (ranges) {
      ranges.hidden = false;
      ranges.addEventListener("click", function (ev) {
        var b = ev.target.closest && ev.target.closest("button[data-minutes]");
        if (!b) {
          return;
        }
        histMinutes = Number(b.getAttribute("data-minutes"));
        Array.prototype.forEach.call(ranges.querySelectorAll("button"), function (o) {
          o.setAttribute("aria-pressed", String(o === b));
        });
        window.clearTimeout(histTimer);
        pollHistory();
      });
    }
  }

  function pollHistory() {
    var u = new URL(hist.getAttribute("data-src"), document.baseURI);
    u.searchParams.set("minutes", String(histMinutes));
    var seq = ++histSeq;
    var hstatus = hist.querySelector(".chart-status");
    fetch(u.toString(), { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (res) {
        if (!res.ok) {
          throw new Error("HTTP " + res.status);
        }
        return res.json();
      })
      .then(function (data) {
        if (seq !== histSeq) {
          return;
        }
        drawHistory(data);
        updateRates(data);
        if (hstatus) {
          hstatus.textContent = "updated " + clock(new Date());
        }
      })
      .catch(function () {
        if (hstatus && seq === histSeq) {
          hstatus.textContent = "update failed";
        }
      })
      .then(function () {
        if (seq === histSeq) {
          histTimer = window.setTimeout(pollHistory, HISTORY_MS);
        }
      });
  }

  // updateRates writes the per-minute figures of the last complete
  // minute: of each row on the overview (and their sum), or of the queue.
  function updateRates(data) {
    var byName = Object.create(null);
    (data.queues || []).forEach(function (q) { byName[q.name] = q; });
    function put(scope, prefix, m) {
      setText(scope, prefix + "processed-rate", m ? String(m.processed) : "\u2014");
      setText(scope, prefix + "failed-rate", m ? String(m.failed) : "\u2014");
    }
    if (single !== null) {
      var q = byName[single];
      put(document, "", q && q.last_minute);
      return;
    }
    Array.prototype.forEach.call(document.querySelectorAll('[data-testid="queue-row"]'), function (row) {
      var q = byName[row.getAttribute("data-queue")];
      put(row, "", q && q.last_minute);
    });
    var s = data.samples || [];
    var foot = document.querySelector('[data-testid="totals"]');
    if (foot) {
      put(foot, "total-", s.length >= 2 ? s[s.length - 2] : null);
    }
  }

  function drawHistory(data) {
    var svg = histSVG;
    while (svg.firstChild) {
      svg.removeChild(svg.firstChild);
    }
    fit(svg);
    var s = data.samples || [];
    var max = 0, processed = 0, failed = 0;
    s.forEach(function (m) {
      max = Math.max(max, m.processed, m.failed);
      processed += m.processed;
      failed += m.failed;
    });
    max = niceMax(max);
    var plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
    var n = Math.max(s.length, 2);
    function x(i) { return LEFT + (i / (n - 1)) * plotW; }
    function y(v) { return TOP + plotH - (v / max) * plotH; }
    [0, 0.5, 1].forEach(function (f) {
      var yy = y(f * max);
      svg.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: yy, y2: yy, "class": "grid-line" }));
      svg.appendChild(el("text", { x: LEFT - 6, y: yy + 3, "text-anchor": "end", "class": "axis-label" }, String(f * max)));
    });
    if (s.length > 0) {
      svg.appendChild(el("text", { x: LEFT, y: H - 4, "class": "axis-label" }, clock(new Date(s[0].at)).slice(0, 5)));
      svg.appendChild(el("text", { x: W - RIGHT, y: H - 4, "text-anchor": "end", "class": "axis-label" }, "now"));
    }
    // The minute under way is drawn dashed: it is not over, and a solid
    // line falling to it would read as a collapse.
    var whole = s.length - 1;
    ["processed", "failed"].forEach(function (k) {
      function pt(m, i) { return x(i).toFixed(1) + "," + y(m[k]).toFixed(1); }
      svg.appendChild(el("polyline", { points: s.slice(0, whole).map(pt).join(" "), "class": "h-" + k }));
      if (whole >= 1) {
        svg.appendChild(el("polyline", { points: pt(s[whole - 1], whole - 1) + " " + pt(s[whole], whole), "class": "h-" + k + " partial" }));
      }
    });
    svg.setAttribute("data-minutes", String(s.length));
    var summary = hist.querySelector('[data-testid="history-summary"]');
    if (summary) {
      var last = s.length >= 2 ? s[s.length - 2] : null;
      summary.textContent = (last ? "Last complete minute (" + clock(new Date(last.at)).slice(0, 5) + "): " +
        last.processed + " processed, " + last.failed + " failed. " : "") +
        "Over the " + rangeText(data.minutes) + " shown: " + processed + " processed, " + failed +
        " failed. The dashed end is the minute under way.";
    }
  }

  function rangeText(minutes) {
    if (minutes % 60 === 0) {
      return minutes === 60 ? "hour" : minutes / 60 + " hours";
    }
    return minutes + " minutes";
  }

  poll();
  if (hist) {
    pollHistory();
  }
})();
