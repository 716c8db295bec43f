/* neuronasv site: index filters and workload charts (uPlot). No network, no innerHTML
   with data: every text from the results goes through textContent or attributes.

   This script formats no number and decides no state: every value's text, each axis's
   ticks and their labels, badges, noise levels, markers, stack layers and colours come
   from Python (neuronasv/publish/workload.py, neuronasv/format.py) in the page's
   metadata and the data files. It only draws and looks up. */
(function () {
  "use strict";

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
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
        var ok = (!onlyReg || r.getAttribute("data-alarm") === "1") &&
          (!text || r.textContent.toLowerCase().indexOf(text) >= 0);
        r.hidden = !ok;
      });
    }
    if (only) only.addEventListener("change", apply);
    if (q) q.addEventListener("input", apply);
    if (location.hash === "#regressions" && only) { only.checked = true; apply(); }
  }

  /* ---------- workload page ---------- */
  // line styles of the markers Python put on each chart (which rows get one is decided there)
  var MARK = {
    regression: { color: "#d62728" }, confirmed: { color: "#d62728" },
    suspect: { color: "#d62728", dash: true }, improvement: { color: "#2ca02c" },
    "more-work": { color: "#b8860b", dash: true }, "exact-more": { color: "#b8860b", dash: true },
    env: { color: "#9467bd", dash: true, thin: true }
  };

  function assemble(meta) {
    var chunks = (window.NASV && window.NASV.c[meta.id]) || [];
    chunks.sort(function (a, b) { return a.start - b.start; });
    var n = meta.n, R = meta.rows.length;
    var d = { x: new Array(n), commits: new Array(n), dates: new Array(n), v: [], vt: [], lo: [], lot: [], hi: [], hit: [] };
    var r, i;
    for (r = 0; r < R; r++) {
      ["v", "vt", "lo", "lot", "hi", "hit"].forEach(function (k) { d[k].push(new Array(n).fill(null)); });
    }
    for (i = 0; i < n; i++) d.x[i] = i;
    chunks.forEach(function (c) {
      for (var j = 0; j < c.commits.length; j++) { d.commits[c.start + j] = c.commits[j]; d.dates[c.start + j] = c.dates[j]; }
      for (var rr = 0; rr < R; rr++) {
        var s = c.scale[rr], labels = c.labels[rr], lv = c.lv[rr];
        for (j = 0; j < c.commits.length; j++) {
          var at = c.start + j, a = c.v[rr][j], b = c.vl[rr][j], lo = c.lo[rr][j], hi = c.hi[rr][j];
          if (a !== null) d.v[rr][at] = a * s;
          if (b !== null) d.vt[rr][at] = labels[b];
          if (lo !== null) { d.lo[rr][at] = lv[lo] * s; d.lot[rr][at] = labels[lo]; }
          if (hi !== null) { d.hi[rr][at] = lv[hi] * s; d.hit[rr][at] = labels[hi]; }
        }
      }
    });
    return d;
  }

  function markersPlugin(marks, rings) {
    return {
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx, dpr = devicePixelRatio;
          ctx.save();
          marks.forEach(function (m) {
            var st = MARK[m.kind] || MARK.env;
            var px = Math.round(u.valToPos(m.index, "x", true));
            if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) return;
            ctx.strokeStyle = st.color; ctx.lineWidth = (st.thin ? 1.5 : 2) * dpr;
            ctx.setLineDash(st.dash ? [6 * dpr, 4 * dpr] : []);
            ctx.beginPath(); ctx.moveTo(px, u.bbox.top); ctx.lineTo(px, u.bbox.top + u.bbox.height); ctx.stroke();
          });
          // the comparison's two points (the comment's numbers): a ring around each
          ctx.setLineDash([]); ctx.lineWidth = 2 * dpr; ctx.strokeStyle = "#1b1f24";
          rings.forEach(function (p) {
            if (p[1] === null) return;
            var x = u.valToPos(p[0], "x", true), y = u.valToPos(p[1], "y", true);
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
            ctx.beginPath(); ctx.arc(x, y, 6 * dpr, 0, 2 * Math.PI); ctx.stroke();
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
      space: 90,  // a date label is about 70 px wide: ticks no closer, labels never overlap
      values: function (u, splits) {
        var prev = null;
        var first = d.dates[Math.max(0, Math.round(u.scales.x.min || 0))] || "";
        var last = d.dates[Math.min(d.dates.length - 1, Math.round(u.scales.x.max || 0))] || "";
        var sameDay = first !== "" && first.slice(0, 10) === last.slice(0, 10);
        return splits.map(function (i) {
          if (i !== Math.round(i) || i < 0 || i >= d.dates.length) return "";  // the margins
          var t = d.dates[i] || "";
          var label = t ? (sameDay ? t : t.slice(0, 10)) : "#" + i;
          if (label === prev) return "";
          prev = label;
          return label;
        });
      }
    };
  }

  // the value axis Python computed: fixed range, its ticks and their labels, its title
  function yAxis(y) {
    return {
      axis: {
        splits: function () { return y.ticks; },
        values: function () { return y.labels; },
        size: y.size, label: y.title, labelSize: 18
      },
      scale: { auto: false, range: function () { return [y.min, y.max]; } }
    };
  }

  // a little room left and right of the first and last commit: their rings and date labels
  // are drawn whole
  var X_SCALE = { time: false, range: function (u, mn, mx) { var p = Math.max(0.5, (mx - mn) * 0.03); return [mn - p, mx + p]; } };

  function marksOf(meta, rows) {
    var out = [];
    rows.forEach(function (r) { (meta.rows[r].marks || []).forEach(function (m) { out.push(m); }); });
    meta.envChanges.forEach(function (e) { out.push({ index: e.index, kind: "env" }); });
    return out;
  }

  function ringsOf(meta, d, r) {
    var c = meta.rows[r].compared, out = [];
    if (!c) return out;
    [c.baseIndex, c.headIndex].forEach(function (i) { if (i !== null && d.v[r][i] !== null) out.push([i, d.v[r][i]]); });
    return out;
  }

  function width(node) { return Math.max(320, (node.clientWidth || 900) - 4); }

  function finiteCount(a) {
    var n = 0;
    for (var i = 0; i < a.length; i++) if (a[i] !== null) n++;
    return n;
  }

  function text(arr) { return function (u, val, si, i) { return i === null || i === undefined ? "" : (arr[i] || ""); }; }

  function commitCell(d) { return { value: function (u, i) { return i === null ? "" : "#" + i + " " + (d.commits[i] || ""); } }; }

  function bandChart(node, meta, d, r, height, onPick) {
    var row = meta.rows[r];
    if (!row.y) { node.appendChild(el("p", null, "No values recorded.")); return null; }
    var y = yAxis(row.y);
    // a series with one measurement (a new op) is drawn as a point, never an empty chart
    var median = { label: row.label + (row.peak ? " · " + row.peak : ""), stroke: "#1f4e79", width: 1.5, spanGaps: false, points: { show: finiteCount(d.v[r]) < 2, size: 8, fill: "#1f4e79" }, value: text(d.vt[r]) };
    var series = [commitCell(d)], data = [d.x], bands = [];
    if (row.band) {  // quartiles recorded (an exact count has none)
      series.push({ label: "IQR low", stroke: "rgba(78,121,167,0.25)", width: 0, points: { show: false }, value: text(d.lot[r]) },
                  { label: "IQR high", stroke: "rgba(78,121,167,0.25)", width: 0, points: { show: false }, value: text(d.hit[r]) });
      data.push(d.lo[r], d.hi[r]);
      bands.push({ series: [2, 1], fill: "rgba(78,121,167,0.22)" });
    }
    series.push(median);
    data.push(d.v[r]);
    var opts = {
      width: width(node), height: height,
      scales: { x: X_SCALE, y: y.scale },
      axes: [xAxis(d), y.axis],
      series: series, bands: bands,
      plugins: [markersPlugin(marksOf(meta, [r]), ringsOf(meta, d, r))],
      cursor: { drag: { x: true, y: false } }
    };
    var u = new uPlot(opts, data, node);
    u.over.addEventListener("click", function () { if (u.cursor.idx !== null && u.cursor.idx !== undefined) onPick(u.cursor.idx); });
    return u;
  }

  function stackChart(node, meta, d, st, onPick) {
    if (!st.y) { node.appendChild(el("p", null, "No values recorded.")); return null; }
    var n = d.x.length, cum = new Array(n).fill(0), ys = [];
    st.layers.forEach(function (L) {
      var yv = new Array(n);
      for (var i = 0; i < n; i++) { cum[i] += d.v[L.row][i] === null ? 0 : d.v[L.row][i]; yv[i] = cum[i]; }
      ys.push(yv);
    });
    var series = [commitCell(d)], data = [d.x];
    // draw the tallest cumulative first: each smaller one paints over it -> stacked areas
    for (var k = st.layers.length - 1; k >= 0; k--) {
      var L = st.layers[k], row = meta.rows[L.row];
      series.push({
        label: row.label + (row.peak ? " · " + row.peak : ""), stroke: L.colour, fill: L.colour,
        width: 0, points: { show: false }, value: text(d.vt[L.row])
      });
      data.push(ys[k]);
    }
    var totals = meta.totals.map(function (t) { return t.row; }).filter(function (r) { return meta.rows[r].axis === meta.rows[st.layers[0].row].axis; });
    var y = yAxis(st.y);
    var u = new uPlot({
      width: width(node), height: 320, scales: { x: X_SCALE, y: y.scale },
      axes: [xAxis(d), y.axis],
      series: series, plugins: [markersPlugin(marksOf(meta, totals), [])], cursor: { drag: { x: true, y: false } }
    }, data, node);
    u.over.addEventListener("click", function () { if (u.cursor.idx !== null && u.cursor.idx !== undefined) onPick(u.cursor.idx); });
    return u;
  }

  function noiseBadge(nz) {
    return el("span", { "class": "nz nz-" + nz.cls, title: nz.title }, nz.text);
  }

  function valueCells(tr, row, d, r, i) {
    var c = row.compared;
    var fromCmp = c && (i === c.headIndex || i === c.baseIndex);
    tr.appendChild(el("td", { "class": "num" }, d.vt[r][i] || ""));
    if (fromCmp) {
      var raw = i === c.headIndex ? c.rawHead : c.rawBase;
      tr.appendChild(el("td", null, "from " + c.sourceText + (c.change ? " · " + c.base + " → " + c.head + ", " + c.change : "") +
        (raw ? " · asv's own result of this run: " + raw : "")));
    } else if (d.vt[r][i]) {
      tr.appendChild(el("td", null, "asv result of this commit's run" + (d.lot[r][i] ? " · IQR " + d.lot[r][i] + " – " + d.hit[r][i] : "")));
    } else tr.appendChild(el("td"));
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
    if (d.dates[i]) head.appendChild(document.createTextNode(" · " + d.dates[i] + " UTC"));
    box.appendChild(head);
    var t = el("table", { "class": "fp" });
    meta.rows.forEach(function (row, r) {
      if (row.kind === "other") return;
      var tr = el("tr");
      tr.appendChild(el("th", null, row.label));
      valueCells(tr, row, d, r, i);
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
      // the words the findings document's row state gives (rendered in Python, never re-derived here)
      meta.rows.forEach(function (row) { if (row.note) box.appendChild(el("p", { "class": "cp-regression" }, row.note)); });
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
    meta.totals.forEach(function (t, k) { bandChart(document.getElementById("chart-total-" + k), meta, d, t.row, 300, pick); });
    meta.stacks.forEach(function (st, k) { stackChart(document.getElementById("chart-stack-" + k), meta, d, st, pick); });
    var grid = document.getElementById("ops");
    // the order Python gave: ops with something to act on first, then the group's order
    meta.order.forEach(function (r) {
      var row = meta.rows[r];
      var cell = el("div", { "class": "cell" });
      var title = el("h3", null, row.label + " ");
      title.appendChild(el("span", { "class": "st st-" + (row.style || row.state) }, row.badge));
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
