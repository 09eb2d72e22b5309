// The report page's script (pg_chronicle client, inlined into index.html by
// html.py): reads the page's JSON, element #report-data (model.PageData),
// builds the header, the navigation and every panel, draws the charts with
// uPlot and exposes window.__charts, __slow, __errors and __ready for the tests.
// Every string from the data goes in as text (textContent), never as markup.
(function () {
'use strict';
window.__charts = [];
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
var D = JSON.parse(document.getElementById('report-data').textContent);
var M = D.meta;
// each chart's x values: shared arrays, stored once
D.panels.forEach(function (p) { p.charts.forEach(function (c) { c.x = D.xs[c.xref]; }); });
var PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
               '#7f7f7f', '#bcbd22', '#17becf', '#393b79', '#ad494a', '#637939', '#7b4173'];
var RUN_COLORS = ['#1f77b4', '#d62728'];

function el(tag, attrs, text) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text;
  return e;
}

function si(v, unit) {
  if (v == null || isNaN(v)) return '-';
  var a = Math.abs(v);
  if (unit === 'bytes/s' || unit === 'bytes') {
    var u = ['B', 'kB', 'MB', 'GB', 'TB'], i = 0;
    while (a >= 1024 && i < u.length - 1) { a /= 1024; v /= 1024; i++; }
    return (a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2)) + ' ' + u[i] + (unit === 'bytes/s' ? '/s' : '');
  }
  if (unit === 'fraction') return (v * 100).toFixed(a >= 0.1 ? 1 : 2) + ' %';
  if (Number.isInteger(v) && a < 1e4) return String(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(2) + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  if (a === 0) return '0';
  return v.toPrecision(3);
}

// time axis ticks in UTC, 24 h (the header's window is UTC too); the date
// too when the window spans more than a day
function utcTicks(u, vals) {
  var span = u.scales.x.max - u.scales.x.min;
  return vals.map(function (v) {
    var s = new Date(v * 1000).toISOString();
    return span > 86400 ? s.slice(5, 10) + ' ' + s.slice(11, 16) : s.slice(11, span > 1800 ? 16 : 19);
  });
}

function fmtX(v) {
  if (M.vs) return v == null ? '-' : v.toFixed(1) + ' s';
  return v == null ? '-' : new Date(v * 1000).toISOString().replace('T', ' ').slice(0, 23) + ' UTC';
}

// the slowest intervals that stand out (the table's marked rows; the others
// are there for reference), shaded on the time charts (single-run reports)
var SLOW = [];
D.panels.forEach(function (p) {
  p.tables.forEach(function (t) {
    if (t.id === 'slowest.table' && t.x) t.x.forEach(function (x, i) {
      if (t.marked.indexOf(i) >= 0) SLOW.push({x0: t.x_start[i], x1: x, rank: t.rows[i][0], run: t.run});
    });
  });
});
window.__slow = SLOW;

function marksPlugin(chart) {
  return { hooks: {
    drawClear: [function (u) {
      if (chart.kind !== 'time') return;
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      ctx.save();
      // the warm-up: left out of every summary, shown shaded; of a
      // comparison's split stacks (X, X.vs), each its own run's
      var split = M.vs && chart.stack, isB = /\.vs$/.test(chart.id);
      [split && isB ? null : M.warmup, split && !isB ? null : M.vs_warmup].forEach(function (wu) {
        if (!wu) return;
        var a = u.valToPos(wu[0], 'x', true), b = u.valToPos(wu[1], 'x', true);
        ctx.fillStyle = 'rgba(120,120,120,0.14)';
        ctx.fillRect(a, top, Math.max(b - a, 1), h);
        ctx.fillStyle = 'rgba(80,80,80,0.9)';
        ctx.font = (10 * devicePixelRatio) + 'px sans-serif';
        ctx.fillText('warm-up', a + 2, top + h - 4 * devicePixelRatio);
      });
      SLOW.forEach(function (s) {
        if (M.vs) return;
        var a = u.valToPos(s.x0, 'x', true), b = u.valToPos(s.x1, 'x', true);
        ctx.fillStyle = 'rgba(214,39,40,0.13)';
        ctx.fillRect(a, top, Math.max(b - a, 2 * devicePixelRatio), h);
        ctx.fillStyle = 'rgba(170,20,20,0.9)';
        ctx.font = (10 * devicePixelRatio) + 'px sans-serif';
        ctx.fillText('#' + s.rank, a + 2, top + 11 * devicePixelRatio);
      });
      ctx.restore();
    }],
    draw: [function (u) {
      var rec = window.__charts.find(function (r) { return r.id === chart.id; });
      if (rec) rec.draws++;
      if (!chart.marks || !chart.marks.length) return;
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      ctx.save();
      ctx.lineWidth = 1 * devicePixelRatio;
      chart.marks.forEach(function (m) {
        var x = Math.round(u.valToPos(m.x, 'x', true));
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        var st = MARK_STYLE[m.kind] || MARK_STYLE.checkpoint_end;
        ctx.strokeStyle = st.color;
        ctx.lineWidth = st.width * devicePixelRatio;
        ctx.setLineDash(st.dash.map(function (d) { return d * devicePixelRatio; }));
        ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
        if (m.kind === 'mark') {     // a flag at the top: the script's own events stand out
          ctx.fillStyle = st.color;
          ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x + 7 * devicePixelRatio, top + 4 * devicePixelRatio);
          ctx.lineTo(x, top + 8 * devicePixelRatio); ctx.fill();
        }
      });
      ctx.restore();
    }],
    // the text of the marks under the cursor (within 4 px), as text
    setCursor: [function (u) {
      if (!chart.marks || !chart.marks.length) return;
      var tip = u.over.querySelector('.mark-tip');
      if (!tip) {
        tip = el('div', {'class': 'mark-tip'});
        u.over.appendChild(tip);
      }
      var left = u.cursor.left, near = [];
      if (left != null && left >= 0) {
        chart.marks.forEach(function (m) {
          if (Math.abs(u.valToPos(m.x, 'x') - left) <= 4) near.push(m.label);
        });
      }
      tip.textContent = near.join('\n');
      tip.style.display = near.length ? 'block' : 'none';
      if (near.length) tip.style.left = Math.min(left + 8, u.over.clientWidth - 220) + 'px';
    }]
  } };
}

// the tick steps of a byte axis: 1, 2, 4, ... bytes up to 2^60
var BYTE_INCRS = [];
for (var bi = 0; bi <= 60; bi++) BYTE_INCRS.push(Math.pow(2, bi));

// how each kind of mark is drawn (chronicle.marks)
var MARK_STYLE = {
  mark: {color: 'rgba(128,60,170,0.95)', width: 1.5, dash: []},
  checkpoint_start: {color: 'rgba(90,90,90,0.55)', width: 1, dash: [4, 3]},
  checkpoint_end: {color: 'rgba(30,30,30,0.85)', width: 1, dash: []},
  recording_start: {color: 'rgba(170,20,20,0.9)', width: 1, dash: [1, 3]},
  long_interval: {color: 'rgba(230,120,10,0.9)', width: 1, dash: [6, 2, 1, 2]},
  stall: {color: 'rgba(214,39,40,0.85)', width: 3, dash: []},
  vacuum_start: {color: 'rgba(44,160,44,0.8)', width: 1, dash: [5, 3]},
  vacuum_end: {color: 'rgba(26,110,26,0.9)', width: 1, dash: []},
  analyze_start: {color: 'rgba(31,155,180,0.8)', width: 1, dash: [5, 3]},
  analyze_end: {color: 'rgba(18,104,122,0.9)', width: 1, dash: []},
  // a run's percentiles on the latency distribution
  p50: {color: 'rgba(40,40,40,0.8)', width: 1, dash: [5, 3]},
  p99: {color: 'rgba(40,40,40,0.9)', width: 1.5, dash: []}
};

function stack(data) {
  var acc = data[0].map(function () { return 0; }), out = [data[0]], bands = [];
  for (var i = 1; i < data.length; i++) {
    out.push(data[i].map(function (v, j) { acc[j] += (v == null ? 0 : v); return acc[j]; }));
  }
  for (var k = 1; k < data.length - 1; k++) bands.push({series: [k + 1, k]});
  return {data: out, bands: bands};
}

function colorFor(chart, i, s) {
  if (M.vs) {
    var runIdx = s.run === M.vs ? 1 : 0;
    var perRun = chart.series.filter(function (t) { return t.run === s.run; });
    var j = perRun.indexOf(s);
    if (perRun.length === 1) return RUN_COLORS[runIdx];
    return runIdx === 0 ? PALETTE[j % PALETTE.length] : PALETTE[j % PALETTE.length];
  }
  return PALETTE[i % PALETTE.length];
}

function hexA(hex, a) {
  var n = parseInt(hex.slice(1), 16);
  return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a + ')';
}

function makeChart(container, chart, width) {
  var box = el('div', {'class': 'chart', id: 'chart-' + chart.id});
  box.appendChild(el('h3', null, chart.title + (chart.unit ? ' (' + chart.unit + ')' : '')));
  container.appendChild(box);
  var raw = [chart.x].concat(chart.series.map(function (s) { return s.values; }));
  var data = raw, bands;
  if (chart.stack) { var st = stack(raw); data = st.data; bands = st.bands; }
  var series = [{
    label: chart.kind === 'time' ? (M.vs ? 'since start' : 'time') : 'latency',
    value: function (u, v) { return chart.kind === 'time' ? fmtX(v) : (v == null ? '-' : si(v) + ' ms'); }
  }];
  chart.series.forEach(function (s, i) {
    var c = colorFor(chart, i, s);
    var dashed = M.vs && !chart.stack && s.run === M.vs &&
      chart.series.filter(function (t) { return t.run === s.run; }).length > 1;
    series.push({
      label: s.label, stroke: c, width: 1.25,
      dash: dashed ? [6, 3] : undefined,
      fill: chart.stack ? hexA(c, 0.55) : undefined,
      spanGaps: !!M.vs && chart.kind === 'time',
      points: {show: false},
      value: function (u, v, si_, idx) { var r = raw[si_][idx]; return si(r, chart.unit); }
    });
  });
  var opts = {
    width: width, height: chart.kind === 'time' ? 230 : 260,
    series: series,
    bands: bands,
    plugins: [marksPlugin(chart)],
    cursor: chart.kind === 'time' ? {sync: {key: 'chronicle-time', setSeries: false}} : {sync: {key: 'chronicle-' + chart.id}},
    scales: {
      // a distribution from its fastest bin's lower edge to its slowest
      // bin's upper one (not to the decades around them)
      x: chart.kind === 'time' ? {time: !M.vs} : {time: false, distr: chart.log_x ? 3 : 1,
         range: function () { return [chart.x_min, chart.x[chart.x.length - 1]]; }},
      // y_max: the pair of stacked charts of a comparison share one scale
      y: chart.log_y ? {distr: 3} : (chart.stack || chart.unit === '%' || chart.unit === 'fraction' ? {range: function (u, mn, mx) {
        var top = chart.y_max != null ? Math.max(chart.y_max, mx) : mx;
        return [0, top > 0 ? top * 1.05 : 1]; }} : {})
    },
    axes: [
      {label: chart.kind === 'time' ? (M.vs ? 'seconds since run start' : null) : 'latency (ms, log)',
       values: chart.kind === 'time' ? (M.vs ? function (u, vals) { return vals.map(function (v) { return v + ' s'; }); } : utcTicks)
                                     // a log axis' unlabelled ticks come as null
                                     : function (u, vals) { return vals.map(function (v) { return v == null ? '' : si(v); }); }},
      {size: 84, values: function (u, vals) { return vals.map(function (v) { return v == null ? '' : si(v, chart.unit); }); },
       // bytes tick at powers of two, as their labels count in units of 1024
       incrs: chart.unit === 'bytes' || chart.unit === 'bytes/s' ? BYTE_INCRS : undefined}
    ]
  };
  if (!M.vs && chart.kind === 'time') opts.tzDate = function (ts) { return uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'); };
  var rec = {id: chart.id, kind: chart.kind, series: chart.series.length, points: chart.x.length,
             nonnull: chart.series.map(function (s) { return s.values.filter(function (v) { return v != null; }).length; }),
             draws: 0, width: 0, height: 0};
  window.__charts.push(rec);
  var u = new uPlot(opts, data, box);
  rec.width = u.width; rec.height = u.height;
  rec.uSeries = u.series.length - 1; rec.uPoints = u.data[0].length;
  // for the tests: where x is drawn, in CSS pixels from the plot's left
  window.__xpos = window.__xpos || {};
  window.__xpos[chart.id] = function (x) { return u.valToPos(x, 'x'); };
  return u;
}

function makeTable(container, t) {
  // long tables (every setting) folded: a click opens them
  if (t.fold && t.rows.length > 25) {
    var det = el('details');
    det.appendChild(el('summary', null, t.title + ' (' + t.rows.length + ' rows)'));
    container.appendChild(det);
    container = det;
  } else if (t.title) container.appendChild(el('h3', null, t.title));
  if (!t.rows.length) {
    if (t.note) container.appendChild(el('p', {'class': 'note'}, t.note));
    return;
  }
  var tab = el('table', {'class': 't', id: 'table-' + t.id});
  var tr = el('tr');
  t.columns.forEach(function (c) { tr.appendChild(el('th', null, c)); });
  tab.appendChild(tr);
  t.rows.forEach(function (r, i) {
    var row = el('tr');
    if (t.marked && t.marked.indexOf(i) >= 0) row.className = 'marked';
    r.forEach(function (v, j) {
      var td = el('td', null, v == null ? '' : (typeof v === 'number' ? si(v) : String(v)));
      if (typeof v === 'string' && (v.length > 40 || j === r.length - 1) && isNaN(Number(v))) td.className = 'txt';
      if (typeof v === 'number') td.title = String(v);
      row.appendChild(td);
    });
    if (t.id === 'slowest.table' && t.x && !M.vs) {
      row.className += ' slow';
      row.addEventListener('click', function () { focusAt(t.x[i]); });
    }
    tab.appendChild(row);
  });
  container.appendChild(tab);
  if (t.note) container.appendChild(el('p', {'class': 'note'}, t.note));
}

var TIME_PLOTS = [];
function focusAt(x) {
  var u = TIME_PLOTS[0];
  if (!u) return;
  u.root.scrollIntoView({behavior: 'smooth', block: 'center'});
  u.setCursor({left: u.valToPos(x, 'x'), top: 10});
}

// header
var hdr = el('header');
hdr.appendChild(el('h1', null, 'pg_chronicle: ' + M.run + (M.vs ? '  vs  ' + M.vs : '')));
hdr.appendChild(el('div', {'class': 'sub'},
  'window ' + M.from + ' \u2192 ' + M.to + ' \u00b7 ' + M.intervals + ' intervals \u00b7 server ' +
  (M.server_version || '?') + (M.vs ? ' \u00b7 B: ' + M.vs_from + ' \u2192 ' + M.vs_to + ', ' +
  M.vs_intervals + ' intervals, server ' + (M.vs_server_version || '?') : '') +
  ' \u00b7 generated ' + M.generated));
function headline(rows, label) {
  var hl = el('div', {'class': 'headline'});
  if (label) hl.appendChild(el('span', {'class': 'run'}, label));
  (rows || []).forEach(function (h) {
    var d = el('div'); d.appendChild(document.createTextNode(h[0] + ' '));
    d.appendChild(el('b', null, h[1])); hl.appendChild(d);
  });
  hdr.appendChild(hl);
}
headline(M.headline, M.vs ? 'A: ' + M.run : null);
if (M.vs) headline(M.vs_headline, 'B: ' + M.vs);
document.body.appendChild(hdr);
var nav = el('nav');
D.panels.forEach(function (p) { nav.appendChild(el('a', {href: '#panel-' + p.id}, p.title)); });
document.body.appendChild(nav);
var main = el('main');
document.body.appendChild(main);
var width = Math.max(600, Math.min(1360, window.innerWidth - 90));

D.panels.forEach(function (p) {
  var sec = el('section', {id: 'panel-' + p.id});
  sec.appendChild(el('h2', null, p.title));
  if (p.about) sec.appendChild(el('p', {'class': 'about'}, p.about));
  main.appendChild(sec);
  if (p.empty) sec.appendChild(el('p', {'class': 'empty'}, p.empty));
  if (p.note) sec.appendChild(el('p', {'class': 'note'}, p.note));
  if (p.picture_error) sec.appendChild(el('p', {'class': 'empty'},
    'The picture of this panel (' + p.id + '.png, ' + p.id + '.svg) could not be drawn: ' + p.picture_error));
  p.charts.forEach(function (c) {
    try {
      var u = makeChart(sec, c, width);
      if (c.kind === 'time') TIME_PLOTS.push(u);
    } catch (e) { window.__errors.push(c.id + ': ' + e); console.error(c.id, e); }
  });
  p.tables.forEach(function (t) { makeTable(sec, t); });
});
requestAnimationFrame(function () { setTimeout(function () { window.__ready = true; }, 50); });
})();
