/* neuronasv site: index filters and workload charts (uPlot). No network, no innerHTML
   with data: every text from the results goes through textContent or attributes. */
(function () {
  "use strict";

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function fmt(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return "n/a";
    var p = function (x) { return Number(x.toPrecision(4)).toString(); };
    if (unit === "seconds") {
      var a = Math.abs(v);
      if (a >= 1) return p(v) + " s";
      if (a >= 1e-3) return p(v * 1e3) + " ms";
      if (a >= 1e-6) return p(v * 1e6) + " µs";
      return p(v * 1e9) + " ns";
    }
    return p(v) + (unit && unit !== "unit" ? " " + unit : "");
  }

  /* ---------- index: workloads with their ops collapsed beneath; filters ---------- */
  function setOpen(group, open) {
    var btn = group.querySelector("button.tog");
    if (!btn) return;
    btn.setAttribute("aria-expanded", open ? "true" : "false");
    btn.textContent = (open ? "▾" : "▸") + btn.textContent.slice(1);
    Array.prototype.forEach.call(group.querySelectorAll("tr.op"), function (r) { r.hidden = !open; });
  }

  function initIndex() {
    var groups = Array.prototype.slice.call(document.querySelectorAll("table.wl tbody.wl"));
    groups.forEach(function (g) {
      var btn = g.querySelector("button.tog");
      if (btn) btn.addEventListener("click", function () {
        setOpen(g, btn.getAttribute("aria-expanded") !== "true");
      });
    });
    var all = document.getElementById("expand-all");
    if (all) all.addEventListener("click", function () {
      var open = all.textContent === "expand all";
      groups.forEach(function (g) { setOpen(g, open); });
      all.textContent = open ? "collapse all" : "expand all";
    });
    return groups;
  }

  function initFilters() {
    var only = document.getElementById("only-reg");
    var q = document.getElementById("q");
    if (!only && !q) return;
    var groups = initIndex();
    var rows = Array.prototype.slice.call(document.querySelectorAll("table.series:not(.wl) tbody tr"));
    var ALARM = { regression: 1, confirmed: 1, suspect: 1, "more-work": 1 };
    function apply() {
      var text = q ? q.value.toLowerCase() : "";
      var onlyReg = only && only.checked;
      groups.forEach(function (g) {
        var ok = (!onlyReg || g.getAttribute("data-alarm") === "1") &&
          (!text || g.textContent.toLowerCase().indexOf(text) >= 0);
        g.hidden = !ok;
        // a search that matches an op opens its workload
        if (ok && text) {
          var inOps = Array.prototype.some.call(g.querySelectorAll("tr.op"), function (r) {
            return r.textContent.toLowerCase().indexOf(text) >= 0;
          });
          if (inOps) setOpen(g, true);
        }
      });
      rows.forEach(function (r) {
        var ok = (!onlyReg || ALARM[r.getAttribute("data-state")] === 1) &&
          (!text || r.textContent.toLowerCase().indexOf(text) >= 0);
        r.hidden = !ok;
      });
    }
    if (only) only.addEventListener("change", apply);
    if (q) q.addEventListener("input", apply);
    if (location.hash === "#regressions" && only) { only.checked = true; apply(); }
  }

  /* ---------- workload page ---------- */
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf"];

  function assemble(meta) {
    var chunks = (window.NASV && window.NASV.c[meta.id]) || [];
    chunks.sort(function (a, b) { return a.start - b.start; });
    var n = meta.n, R = meta.rows.length;
    var x = new Array(n), commits = new Array(n), dates = new Array(n);
    var v = [], lo = [], hi = [];
    for (var r = 0; r < R; r++) { v.push(new Array(n).fill(null)); lo.push(new Array(n).fill(null)); hi.push(new Array(n).fill(null)); }
    for (var i = 0; i < n; i++) x[i] = i;
    chunks.forEach(function (c) {
      for (var j = 0; j < c.commits.length; j++) { commits[c.start + j] = c.commits[j]; dates[c.start + j] = c.dates[j]; }
      for (var r = 0; r < R; r++) {
        var s = c.scale[r];
        [[c.v[r], v[r]], [c.lo[r], lo[r]], [c.hi[r], hi[r]]].forEach(function (pair) {
          var src = pair[0], dst = pair[1];
          for (var j = 0; j < src.length; j++) dst[c.start + j] = src[j] === null ? null : src[j] * s;
        });
      }
    });
    return { x: x, commits: commits, dates: dates, v: v, lo: lo, hi: hi };
  }

  function markersPlugin(marks) {
    return {
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx;
          ctx.save();
          marks.forEach(function (m) {
            var px = Math.round(u.valToPos(m.index, "x", true));
            if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) return;
            ctx.strokeStyle = m.color; ctx.lineWidth = m.width || 2 * devicePixelRatio;
            ctx.setLineDash(m.dash ? [6 * devicePixelRatio, 4 * devicePixelRatio] : []);
            ctx.beginPath(); ctx.moveTo(px, u.bbox.top); ctx.lineTo(px, u.bbox.top + u.bbox.height); ctx.stroke();
          });
          ctx.restore();
        }]
      }
    };
  }

  function xAxis(d) {
    // The x axis is the commit order: ticks only on whole commits, each labelled with its
    // date (and time when the shown commits fall within one day); a label equal to the
    // previous one is left out so short histories do not repeat the same date.
    return {
      incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000],
      values: function (u, splits) {
        var prev = null;
        var first = d.dates[Math.max(0, Math.round(u.scales.x.min || 0))];
        var last = d.dates[Math.min(d.dates.length - 1, Math.round(u.scales.x.max || 0))];
        var sameDay = first && last && Math.abs(last - first) < 864e5;
        return splits.map(function (i) {
          if (Math.abs(i - Math.round(i)) > 1e-9) return "";
          var t = d.dates[Math.round(i)];
          var label = t
            ? (sameDay ? new Date(t).toISOString().slice(0, 16).replace("T", " ")
                       : new Date(t).toISOString().slice(0, 10))
            : "#" + Math.round(i);
          if (label === prev) return "";
          prev = label;
          return label;
        });
      }
    };
  }

  function marksFor(meta, rowIdx) {
    var out = [];
    meta.changePoints.forEach(function (c) {
      if (rowIdx === null || c.row === rowIdx) out.push({ index: c.index, color: c.kind === "regression" ? "#d62728" : "#2ca02c" });
    });
    // the newest commit's regression against its parent: dashed while only a suspect
    if (meta.newest) meta.rows.forEach(function (row, r) {
      if (rowIdx !== null && rowIdx !== -1 && r !== rowIdx) return;
      if (rowIdx === -1 && !row.total) return;
      if (row.state === "confirmed" || row.state === "suspect") {
        out.push({ index: meta.newest.index, color: "#d62728", dash: row.state === "suspect" });
      } else if (row.state === "more-work") {
        out.push({ index: meta.newest.index, color: "#b8860b", dash: true });
      }
    });
    meta.envChanges.forEach(function (e) { out.push({ index: e.index, color: "#9467bd", dash: true, width: 1.5 * devicePixelRatio }); });
    return out;
  }

  function width(node) { return Math.max(320, (node.clientWidth || 900) - 4); }

  function finiteCount(a) {
    var n = 0;
    for (var i = 0; i < a.length; i++) if (a[i] !== null && isFinite(a[i])) n++;
    return n;
  }

  function bandChart(node, meta, d, r, height, onPick) {
    var unit = meta.rows[r].unit;
    var opts = {
      width: width(node), height: height,
      scales: { x: { time: false } },
      axes: [xAxis(d), { values: function (u, s) { return s.map(function (t) { return fmt(t, unit); }); }, size: 70 }],
      series: [
        { value: function (u, i) { return i === null ? "" : "#" + i + " " + (d.commits[i] || ""); } },
        { label: "IQR low", stroke: "rgba(78,121,167,0.25)", width: 0, points: { show: false }, value: function (u, val) { return fmt(val, unit); } },
        { label: "IQR high", stroke: "rgba(78,121,167,0.25)", width: 0, points: { show: false }, value: function (u, val) { return fmt(val, unit); } },
        // a series with one measurement (a new op) is drawn as a point, never an empty chart
        { label: meta.rows[r].label + (meta.rows[r].peak ? " · " + meta.rows[r].peak : ""), stroke: "#1f4e79", width: 1.5, spanGaps: false, points: { show: finiteCount(d.v[r]) < 2, size: 8, fill: "#1f4e79" }, value: function (u, val) { return fmt(val, unit); } }
      ],
      bands: [{ series: [2, 1], fill: "rgba(78,121,167,0.22)" }],
      plugins: [markersPlugin(marksFor(meta, r))],
      cursor: { drag: { x: true, y: false } }
    };
    var u = new uPlot(opts, [d.x, d.lo[r], d.hi[r], d.v[r]], node);
    u.over.addEventListener("click", function () { if (u.cursor.idx !== null && u.cursor.idx !== undefined) onPick(u.cursor.idx); });
    return u;
  }

  function stackChart(node, meta, d, onPick) {
    var ops = [];
    meta.rows.forEach(function (row, r) { if (!row.total) ops.push(r); });
    if (!ops.length) { node.appendChild(el("p", null, "No per-op series for this workload.")); return null; }
    var last = function (r) { var a = d.v[r]; for (var i = a.length - 1; i >= 0; i--) if (a[i] !== null) return a[i]; return 0; };
    ops.sort(function (a, b) { return last(b) - last(a); });
    var n = d.x.length, cum = new Array(n).fill(0), layers = [];
    ops.forEach(function (r) {
      var y = new Array(n);
      for (var i = 0; i < n; i++) { cum[i] += d.v[r][i] === null ? 0 : d.v[r][i]; y[i] = cum[i]; }
      layers.push({ r: r, y: y });
    });
    var unit = meta.rows[ops[0]].unit;
    var series = [{ value: function (u, i) { return i === null ? "" : "#" + i + " " + (d.commits[i] || ""); } }];
    var data = [d.x];
    // draw the tallest cumulative first: each smaller one paints over it -> stacked areas
    for (var k = layers.length - 1; k >= 0; k--) {
      var L = layers[k], color = PALETTE[k % PALETTE.length], rr = L.r;
      series.push({
        label: meta.rows[rr].label + (meta.rows[rr].peak ? " · " + meta.rows[rr].peak : ""), stroke: color, fill: color, width: 0, points: { show: false },
        value: (function (r2) { return function (u, val, si, i) { return i === null || i === undefined ? "" : fmt(d.v[r2][i], unit); }; })(rr)
      });
      data.push(L.y);
    }
    var u = new uPlot({
      width: width(node), height: 320, scales: { x: { time: false }, y: { range: function (uu, mn, mx) { return [0, mx * 1.05]; } } },
      axes: [xAxis(d), { values: function (uu, s) { return s.map(function (t) { return fmt(t, unit); }); }, size: 70 }],
      series: series, plugins: [markersPlugin(marksFor(meta, -1))], cursor: { drag: { x: true, y: false } }
    }, data, node);
    u.over.addEventListener("click", function () { if (u.cursor.idx !== null && u.cursor.idx !== undefined) onPick(u.cursor.idx); });
    return u;
  }

  function noiseBadge(level) {
    if (level === null || level === undefined) return el("span", { "class": "nz nz-none", title: "no quartiles recorded" }, "–");
    var cls = level < 0.02 ? "low" : (level < 0.10 ? "mid" : "high");
    var pct = level < 0.1 ? (level * 100).toFixed(1) : (level * 100).toFixed(0);
    return el("span", { "class": "nz nz-" + cls, title: "noise: within-run IQR/median, median of the last 10 commits" }, "IQR " + pct + " %");
  }

  function details(meta, d, i) {
    var box = document.getElementById("details");
    while (box.firstChild) box.removeChild(box.firstChild);
    var c = d.commits[i] || "";
    var head = el("p");
    head.appendChild(el("strong", null, "Commit #" + i + " "));
    if (meta.commitUrl && c) {
      head.appendChild(el("a", { href: meta.commitUrl.split("{commit}").join(c) }, c));
    } else head.appendChild(el("code", null, c));
    if (d.dates[i]) head.appendChild(document.createTextNode(" · " + new Date(d.dates[i]).toISOString().replace(".000Z", "Z")));
    box.appendChild(head);
    var t = el("table", { "class": "fp" });
    meta.rows.forEach(function (row, r) {
      var tr = el("tr");
      tr.appendChild(el("th", null, row.label));
      tr.appendChild(el("td", null, fmt(d.v[r][i], row.unit)));
      tr.appendChild(el("td", null, d.lo[r][i] === null ? "" : "IQR " + fmt(d.lo[r][i], row.unit) + " – " + fmt(d.hi[r][i], row.unit)));
      t.appendChild(tr);
    });
    box.appendChild(t);
    meta.traces.forEach(function (tr) {
      if (tr[0] !== i) return;
      var p = el("p", null, "Trace of this commit: ");
      if (meta.traceUrl) p.appendChild(el("a", { href: meta.traceUrl.split("{path}").join(tr[1]), download: "" }, tr[1]));
      else p.appendChild(el("code", null, tr[1]));
      p.appendChild(document.createTextNode(" — open it in "));
      p.appendChild(el("a", { href: "https://ui.perfetto.dev" }, "Perfetto"));
      p.appendChild(document.createTextNode(" (drag the file onto the page); a Neuron trace folder (NTFF) opens in Neuron Explorer."));
      box.appendChild(p);
    });
    if (meta.newest && i === meta.newest.index) {
      meta.rows.forEach(function (row) {
        if (row.state !== "confirmed" && row.state !== "suspect" && row.state !== "more-work") return;
        // the words the findings document's row state gives (rendered in Python, never re-derived here)
        box.appendChild(el("p", { "class": "cp-regression" }, row.label + " against the parent commit: " + row.words));
      });
    }
    meta.changePoints.forEach(function (cp) {
      if (cp.index !== i) return;
      box.appendChild(el("p", { "class": "cp-" + cp.kind }, meta.rows[cp.row].label + ": " + cp.reason + (cp.ack ? " (acknowledged: " + cp.ack + ")" : "")));
    });
    meta.envChanges.forEach(function (e) {
      if (e.index !== i) return;
      box.appendChild(el("p", null, "Environment change: " + e.changes.map(function (x) { return x[0] + " " + x[1] + " → " + x[2]; }).join(", ")));
    });
  }

  function initWorkload() {
    var metaEl = document.getElementById("meta");
    if (!metaEl || typeof uPlot === "undefined") return;
    var meta = JSON.parse(metaEl.textContent);
    var d = assemble(meta);
    var pick = function (i) { details(meta, d, i); };
    var totalRow = -1;
    meta.rows.forEach(function (row, r) { if (row.total && totalRow < 0) totalRow = r; });
    var totalNode = document.getElementById("chart-total");
    if (totalRow >= 0) bandChart(totalNode, meta, d, totalRow, 300, pick);
    else totalNode.appendChild(el("p", null, "No workload total in this group; see the series below."));
    stackChart(document.getElementById("chart-stack"), meta, d, pick);
    var grid = document.getElementById("ops");
    // ops with something to act on first, then by name (the index's order)
    var SEV = { regression: 0, confirmed: 1, suspect: 2, "more-work": 3, failed: 4, acknowledged: 5, improved: 6, "new": 7, ok: 8 };
    var order = meta.rows.map(function (row, r) { return r; });
    order.sort(function (a, b) {
      var sa = SEV[meta.rows[a].state], sb = SEV[meta.rows[b].state];
      return sa !== sb ? sa - sb : a - b;
    });
    order.forEach(function (r) {
      var row = meta.rows[r];
      if (r === totalRow) return;
      var cell = el("div", { "class": "cell" });
      var title = el("h3", null, row.label + " ");
      title.appendChild(el("span", { "class": "st st-" + row.state }, row.state));
      if (row.change) title.appendChild(el("span", { "class": "chg" }, " " + row.change + " vs parent"));
      title.appendChild(document.createTextNode(" "));
      title.appendChild(noiseBadge(row.noise));
      cell.appendChild(title);
      // of peak at the newest commit (roofline: ideal time at the device's peak / measured)
      if (row.peak) cell.appendChild(el("p", { "class": "peak", title: "ideal time at the device's peak (bandwidth or FLOP/s, whichever bounds) / measured self device time, newest commit" }, row.peak + " at the newest commit"));
      var box = el("div", { "class": "chart small" });
      cell.appendChild(box);
      grid.appendChild(cell);
      bandChart(box, meta, d, r, 170, pick);
    });
    if (d.x.length) pick(d.x.length - 1);
  }

  function init() { initFilters(); initWorkload(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
