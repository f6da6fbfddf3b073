/* colo charts: shared by the live dashboard (dashboard.js) and the sim report (report.js).
 * Plain ES2017, no modules: defines the global ColoCharts. Needs uPlot (web/static/vendor/uplot),
 * loaded before this file. Every chart is a uPlot instance, so a test can count the points in
 * chart.data; the Gantt and bar charts draw their shapes in uPlot draw hooks.
 * Nothing here writes data into innerHTML: names come from users and are set as text. */
(function (global) {
  'use strict';

  var uPlot = global.uPlot;
  var DASH = '\u2014';

  var COLORS = ['#2563eb', '#ea580c', '#16a34a', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#4b5563',
                '#ca8a04', '#0d9488', '#9333ea', '#65a30d'];
  var STATE_COLORS = {running: '#3b82f6', collocated: '#8b5cf6', oom: '#dc2626', recovered: '#f59e0b',
                      done: '#22a05a', slot: '#0891b2', other: '#9ca3af'};
  var STATE_LABELS = {running: 'running', collocated: 'collocated (shared a GPU)', oom: 'OOM (attempt failed)',
                      recovered: 'recovered after OOM', done: 'done (alone)',
                      slot: 'time slot ended (checkpointed / preempted)', other: 'failed / cancelled / lost'};
  var STATE_ORDER = ['running', 'collocated', 'done', 'oom', 'recovered', 'slot', 'other'];

  // ---------------------------------------------------------------- formatting
  function isNum(v) { return typeof v === 'number' && isFinite(v); }

  // Any value as display text; null, undefined, '' and NaN are an em dash, never "null".
  function text(v) {
    if (v === null || v === undefined || v === '' || (typeof v === 'number' && !isFinite(v))) return DASH;
    return String(v);
  }

  function trimZeros(s) { return s.indexOf('.') >= 0 ? s.replace(/0+$/, '').replace(/\.$/, '') : s; }

  function fmtNum(v, digits) {
    if (!isNum(v)) return DASH;
    return trimZeros(v.toFixed(digits === undefined ? 2 : digits));
  }

  // MiB as "512 MiB" below 1 GiB, else "8 GiB" / "39.5 GiB".
  function fmtMiB(mib) {
    if (!isNum(mib)) return DASH;
    var a = Math.abs(mib);
    if (a < 1024) return Math.round(mib) + ' MiB';
    return trimZeros((mib / 1024).toFixed(a >= 102400 ? 0 : (a >= 10240 ? 1 : 2))) + ' GiB';
  }

  // Always in GiB (axes, where the unit must not change between ticks).
  function fmtGiB(mib) {
    if (!isNum(mib)) return DASH;
    var g = mib / 1024;
    return trimZeros(g.toFixed(Math.abs(g) >= 100 ? 0 : (Math.abs(g) >= 10 ? 1 : 2))) + ' GiB';
  }

  // Seconds as "8.5 s", "42 s", "3 min 5 s", "2 h 7 min", "3 d 4 h".
  function fmtDuration(s) {
    if (!isNum(s)) return DASH;
    var neg = s < 0, out;
    s = Math.abs(s);
    if (s < 10) out = trimZeros(s.toFixed(1)) + ' s';
    else if (s < 60) out = Math.round(s) + ' s';
    else if (s < 3600) {
      var m = Math.floor(s / 60), r = Math.round(s - 60 * m);
      if (r === 60) { m += 1; r = 0; }
      out = m + ' min' + (r ? ' ' + r + ' s' : '');
    } else if (s < 86400) {
      var h = Math.floor(s / 3600), mm = Math.round((s - 3600 * h) / 60);
      if (mm === 60) { h += 1; mm = 0; }
      out = h + ' h' + (mm ? ' ' + mm + ' min' : '');
    } else {
      var d = Math.floor(s / 86400), hh = Math.round((s - 86400 * d) / 3600);
      if (hh === 24) { d += 1; hh = 0; }
      out = d + ' d' + (hh ? ' ' + hh + ' h' : '');
    }
    return (neg ? '-' : '') + out;
  }

  // Tick labels for a seconds axis: "0", "30 s", "15 min", "1 h 30 min" (ticks fall on DURATION_INCRS).
  function fmtAxisDuration(s) {
    if (!isNum(s)) return '';
    return s === 0 ? '0' : fmtDuration(s);
  }
  var DURATION_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 14400,
                        21600, 43200, 86400, 172800, 432000, 864000, 2592000];
  // Axis steps for MiB values that fall on whole GiB.
  var MIB_INCRS = [1, 2, 5, 10, 25, 50, 100, 128, 256, 512, 1024, 2048, 4096, 5120, 8192, 10240, 16384, 20480,
                   40960, 81920, 163840, 327680, 655360, 1310720];

  function fmtPct(frac, digits) {
    if (!isNum(frac)) return DASH;
    return fmtNum(frac * 100, digits === undefined ? 0 : digits) + '%';
  }
  function fmtWatts(w) { return isNum(w) ? Math.round(w) + ' W' : DASH; }
  function fmtMJ(mj) { return isNum(mj) ? fmtNum(mj, mj >= 100 ? 0 : 2) + ' MJ' : DASH; }
  function fmtCount(v) { return isNum(v) ? String(Math.round(v * 100) / 100) : DASH; }

  function pad2(n) { return n < 10 ? '0' + n : String(n); }
  // Unix seconds as local "HH:MM:SS".
  function fmtClock(unix) {
    if (!isNum(unix)) return DASH;
    var d = new Date(unix * 1000);
    return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  }
  // Unix seconds as local "YYYY-MM-DD HH:MM:SS".
  function fmtDateTime(unix) {
    if (!isNum(unix)) return DASH;
    var d = new Date(unix * 1000);
    return d.getFullYear() + '-' + pad2(d.getMonth() + 1) + '-' + pad2(d.getDate()) + ' ' + fmtClock(unix);
  }

  // ---------------------------------------------------------------- small DOM helpers
  // el('td', {className: 'num', title: '...'}, 'text' | Node | [children])
  function el(tag, props, children) {
    var n = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === undefined || v === null) return;
        if (k === 'dataset') Object.keys(v).forEach(function (d) { n.dataset[d] = v[d]; });
        else if (k === 'style') n.setAttribute('style', v);
        else if (k in n && k !== 'list') n[k] = v;
        else n.setAttribute(k, v);
      });
    }
    append(n, children);
    return n;
  }
  function append(n, children) {
    if (children === undefined || children === null) return n;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === undefined || c === null || c === false) return;
      n.appendChild(typeof c === 'object' && c.nodeType ? c : document.createTextNode(text(c)));
    });
    return n;
  }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); return n; }

  // ---------------------------------------------------------------- chart registry (resize)
  var registry = [];
  var resizeQueued = false;

  function widthOf(container) {
    var w = Math.floor(container.getBoundingClientRect().width);
    return w > 50 ? w : 600;
  }
  function register(u, container) { registry.push({u: u, el: container}); return u; }
  function destroy(u) {
    registry = registry.filter(function (r) { return r.u !== u; });
    try { u.destroy(); } catch (e) { /* already gone */ }
  }
  function resizeAll() {
    resizeQueued = false;
    registry.forEach(function (r) {
      var w = Math.floor(r.el.getBoundingClientRect().width);
      if (w > 50 && Math.abs(w - r.u.width) > 1) r.u.setSize({width: w, height: r.u.height});
    });
  }
  if (global.addEventListener) {
    global.addEventListener('resize', function () {
      if (!resizeQueued) { resizeQueued = true; global.requestAnimationFrame(resizeAll); }
    });
  }

  // A scale range: fixed ends where given, else the data's, with 5 % headroom at the top.
  function rangeFn(a) {
    return function (u, min, max) {
      var lo = isNum(a.min) ? a.min : min, hi = isNum(a.max) ? a.max : max;
      if (isNum(a.atLeast)) hi = Math.max(isNum(hi) ? hi : a.atLeast, a.atLeast);
      if (!isNum(lo)) lo = 0;
      if (!isNum(hi)) hi = lo + 1;
      if (hi <= lo) hi = lo + (Math.abs(lo) || 1);
      if (!isNum(a.max)) hi += (hi - lo) * 0.05;
      return [lo, hi];
    };
  }

  function xSeries(xTime, categories) {
    return {
      label: categories ? 'configuration' : (xTime ? 'time' : 't'),
      value: function (u, v) {
        if (v === null || v === undefined) return DASH;
        if (categories) return text(categories[Math.round(v)]);
        return xTime ? fmtClock(v) : fmtDuration(v);
      }
    };
  }

  // Local 24-hour clock ticks; seconds only when the ticks are less than a minute apart.
  function clockTicks(u, splits, axisIdx, space, incr) {
    var span = splits.length ? splits[splits.length - 1] - splits[0] : 0;
    return splits.map(function (v) {
      if (!isNum(v)) return '';
      var d = new Date(v * 1000);
      var hm = pad2(d.getHours()) + ':' + pad2(d.getMinutes());
      if (incr < 60) return hm + ':' + pad2(d.getSeconds());
      if (span >= 86400 || incr >= 86400) return (d.getMonth() + 1) + '/' + d.getDate() + ' ' + hm;
      return hm;
    });
  }

  function xAxis(xTime) {
    if (xTime) return {space: 70, incrs: DURATION_INCRS, values: clockTicks};
    return {space: 70, incrs: DURATION_INCRS, values: function (u, splits) { return splits.map(fmtAxisDuration); }};
  }

  function legendValue(fmt) {
    return function (u, v) { return v === null || v === undefined ? DASH : fmt(v); };
  }

  // ---------------------------------------------------------------- line chart
  // cfg: {title, x: 'time' (Unix s, default) | 'seconds' (from 0), height, sync (cursor sync key),
  //       step (draw steps), y: {label, fmt, min, max, atLeast}, y2: {...} (optional right axis),
  //       series: [{label, color, scale: 'y'|'y2', dash: [5, 5], width, fill, fmt}],
  //       data: [x[], s1[], s2[], ...] (nulls are gaps)}
  function timeSeries(container, cfg) {
    var xTime = cfg.x !== 'seconds';
    var axisCfg = {y: cfg.y || {}, y2: cfg.y2 || null};
    var series = [xSeries(xTime)];
    var scales = {x: {time: xTime}};
    var axes = [xAxis(xTime)];
    cfg.series.forEach(function (s, i) {
      var scale = s.scale || 'y';
      var fmt = s.fmt || (axisCfg[scale] && axisCfg[scale].fmt) || fmtCount;
      var so = {
        label: s.label, scale: scale, stroke: s.color || COLORS[i % COLORS.length], width: s.width || 1.5,
        value: legendValue(fmt), points: {show: false}, spanGaps: false
      };
      if (s.dash) so.dash = s.dash;
      if (s.fill) so.fill = s.fill;
      if (s.step || cfg.step) so.paths = uPlot.paths.stepped({align: 1});
      series.push(so);
    });
    ['y', 'y2'].forEach(function (k) {
      var a = axisCfg[k];
      if (!a) return;
      var fmt = a.axisFmt || a.fmt || fmtCount;
      scales[k] = {range: rangeFn(a)};
      var axis = {
        scale: k, side: k === 'y2' ? 1 : 3, label: a.label, size: a.size || 64, grid: {show: k === 'y'},
        values: function (u, splits) { return splits.map(fmt); }
      };
      if (a.incrs) axis.incrs = a.incrs;
      axes.push(axis);
    });
    var cursor = {points: {size: 6}};
    if (cfg.sync) cursor.sync = {key: cfg.sync};
    var opts = {
      title: cfg.title, width: widthOf(container), height: cfg.height || 220, class: 'colo-line',
      scales: scales, series: series, axes: axes, legend: {live: true}, cursor: cursor
    };
    var u = new uPlot(opts, cfg.data, container);
    u.coloKind = 'line';
    return register(u, container);
  }

  // ---------------------------------------------------------------- Gantt chart
  // The colour class of one attempt (a job that ran more than once has one entry per attempt).
  function ganttState(j) {
    var s = j.state;
    if (s === 'oom') return 'oom';
    if (s === 'recovered') return 'recovered';
    if (s === 'checkpointed' || s === 'preempted') return 'slot';
    if (s === 'done' || s === 'running') return j.collocated ? 'collocated' : s;
    return 'other';
  }

  function legendRow(states) {
    return el('div', {className: 'colo-swatches'}, states.map(function (s) {
      return el('span', {className: 'colo-swatch'}, [
        el('i', {style: 'background:' + STATE_COLORS[s]}), STATE_LABELS[s]]);
    }));
  }

  // cfg: {title, gpus: n, x: 'seconds' | 'time', tStart (the axis' start, at most), tEnd (where an
  //       unfinished attempt's bar ends, the axis' end at least), sync,
  //       jobs: [{id, workload|name, gpus: [slot...], start, end|null, state, collocated, attempt}]}
  // One row per GPU (GPU 0 on top); attempts that overlap on a GPU get their own lane in its row.
  // data: x = every start and end, y = attempts running then (not drawn; shown in the legend).
  function gantt(container, cfg) {
    var jobs = (cfg.jobs || []).filter(function (j) { return isNum(j.start); });
    var n = isNum(cfg.gpus) && cfg.gpus > 0 ? Math.floor(cfg.gpus) : 0;
    jobs.forEach(function (j) { (j.gpus || []).forEach(function (g) { if (isNum(g)) n = Math.max(n, g + 1); }); });
    n = Math.max(1, n);
    var tStart = isNum(cfg.tStart) ? cfg.tStart : Infinity, tEnd = isNum(cfg.tEnd) ? cfg.tEnd : -Infinity;
    jobs.forEach(function (j) {
      tStart = Math.min(tStart, j.start);
      tEnd = Math.max(tEnd, isNum(j.end) ? j.end : j.start);
    });
    if (!isNum(tStart)) { tStart = 0; tEnd = isNum(cfg.tEnd) ? cfg.tEnd : 1; }
    if (tEnd <= tStart) tEnd = tStart + 1;

    var bars = [], lanes = [], used = {};
    for (var g = 0; g < n; g++) {
      var segs = jobs.filter(function (j) { return (j.gpus || []).indexOf(g) >= 0; }).map(function (j) {
        return {job: j, gpu: g, start: j.start, end: isNum(j.end) ? j.end : tEnd, open: !isNum(j.end),
                state: ganttState(j)};
      });
      segs.sort(function (a, b) { return a.start - b.start || a.end - b.end; });
      var laneEnds = [];
      segs.forEach(function (s) {
        var l = 0;
        while (l < laneEnds.length && laneEnds[l] > s.start) l++;
        laneEnds[l] = s.end;
        s.lane = l;
        bars.push(s);
        used[s.state] = true;
      });
      lanes[g] = Math.max(1, laneEnds.length);
    }
    var maxLanes = Math.max.apply(null, lanes);

    var xs = [];
    jobs.forEach(function (j) { xs.push(j.start); xs.push(isNum(j.end) ? j.end : tEnd); });
    xs.push(tStart, tEnd);
    xs.sort(function (a, b) { return a - b; });
    xs = xs.filter(function (v, i) { return i === 0 || v !== xs[i - 1]; });
    var running = xs.map(function (x) {
      var c = 0;
      jobs.forEach(function (j) { if (j.start <= x && x < (isNum(j.end) ? j.end : tEnd)) c++; });
      return c;
    });

    var rowPx = Math.min(110, Math.max(34, maxLanes * 10 + 12));
    var height = Math.max(140, n * rowPx + 60);
    var xTime = cfg.x === 'time';
    var rowOf = function (gpu) { return n - 1 - gpu; };
    var pxr = function () { return uPlot.pxRatio || global.devicePixelRatio || 1; };

    var legendEl = legendRow(STATE_ORDER.filter(function (s) { return used[s]; }));
    var plotEl = el('div', {className: 'colo-gantt-plot'});
    var infoEl = el('div', {className: 'colo-gantt-info'}, 'Point at a bar for the job.');
    container.appendChild(legendEl);
    container.appendChild(plotEl);
    container.appendChild(infoEl);

    function barGeom(u, b, canvas) {
      var x0 = u.valToPos(b.start, 'x', canvas), x1 = u.valToPos(b.end, 'x', canvas);
      var row = Math.abs(u.valToPos(0, 'y', canvas) - u.valToPos(1, 'y', canvas));
      var inner = row * 0.84, lh = inner / lanes[b.gpu];
      var top = u.valToPos(rowOf(b.gpu), 'y', canvas) - inner / 2 + b.lane * lh;
      return {x: x0, w: x1 - x0, y: top, h: lh};
    }

    function draw(u) {
      var ctx = u.ctx, bb = u.bbox, r = pxr();
      ctx.save();
      ctx.beginPath();
      ctx.rect(bb.left, bb.top, bb.width, bb.height);
      ctx.clip();
      ctx.strokeStyle = '#e5e7eb';
      ctx.lineWidth = r;
      for (var k = 0; k < n - 1; k++) {
        var y = Math.round(u.valToPos(k + 0.5, 'y', true)) + 0.5;
        ctx.beginPath();
        ctx.moveTo(bb.left, y);
        ctx.lineTo(bb.left + bb.width, y);
        ctx.stroke();
      }
      ctx.font = Math.round(10 * r) + 'px system-ui, sans-serif';
      ctx.textAlign = 'left';
      ctx.textBaseline = 'middle';
      bars.forEach(function (b) {
        var gm = barGeom(u, b, true);
        var gap = Math.min(1 * r, gm.h * 0.15);
        var w = Math.max(gm.w, r);
        ctx.fillStyle = STATE_COLORS[b.state];
        ctx.globalAlpha = b.open ? 0.75 : 1;
        ctx.fillRect(gm.x, gm.y + gap, w, gm.h - 2 * gap);
        ctx.globalAlpha = 1;
        if (w > 3 * r && gm.h > 5 * r) {
          ctx.strokeStyle = 'rgba(255,255,255,0.9)';
          ctx.strokeRect(gm.x, gm.y + gap, w, gm.h - 2 * gap);
        }
        var label = String(b.job.id);
        if (gm.h >= 13 * r && w > ctx.measureText(label).width + 8 * r) {
          ctx.fillStyle = '#fff';
          ctx.fillText(label, gm.x + 3 * r, gm.y + gm.h / 2);
        }
      });
      ctx.restore();
    }

    function describe(b) {
      var j = b.job, fmtT = xTime ? fmtClock : fmtDuration;
      var parts = ['job ' + text(j.id)];
      var name = j.workload !== undefined ? j.workload : j.name;
      parts.push(text(name));
      if (isNum(j.attempt)) parts.push('attempt ' + j.attempt);
      parts.push('GPU ' + (j.gpus || []).join('+'));
      parts.push(fmtT(j.start) + ' \u2192 ' + (b.open ? 'still running' : fmtT(j.end)) +
                 ' (' + fmtDuration((b.open ? tEnd : j.end) - j.start) + ')');
      parts.push(text(j.state) + (j.collocated ? ', collocated' : ''));
      return parts.join(' \u00b7 ');
    }

    function hover(u) {
      var cx = u.cursor.left, cy = u.cursor.top, hit = null;
      if (isNum(cx) && cx >= 0) {
        for (var i = bars.length - 1; i >= 0 && !hit; i--) {
          var gm = barGeom(u, bars[i], false);
          if (cx >= gm.x - 1 && cx <= gm.x + Math.max(gm.w, 2) + 1 && cy >= gm.y && cy <= gm.y + gm.h) hit = bars[i];
        }
      }
      infoEl.textContent = hit ? describe(hit) : (bars.length ? 'Point at a bar for the job.' : 'No job has started.');
    }

    var rows = [];
    for (var i = 0; i < n; i++) rows.push(i);
    var cursor = {points: {show: false}, y: false};
    if (cfg.sync) cursor.sync = {key: cfg.sync};
    var opts = {
      title: cfg.title, width: widthOf(container), height: height, class: 'colo-gantt',
      // x: the data run from tStart to tEnd, so the default range is theirs and a drag zooms.
      scales: {x: {time: xTime},
               y: {range: function () { return [-0.5, n - 0.5]; }}, n: {}},
      series: [xSeries(xTime), {label: 'attempts running', scale: 'n', stroke: '#374151', width: 0,
                                paths: function () { return null; }, points: {show: false}, value: legendValue(fmtCount)}],
      axes: [xAxis(xTime), {
        scale: 'y', size: 64, grid: {show: false}, ticks: {show: false},
        splits: function () { return rows; },
        values: function (u, splits) { return splits.map(function (s) { return 'GPU ' + (n - 1 - Math.round(s)); }); }
      }],
      legend: {live: true}, cursor: cursor,
      hooks: {draw: [draw], setCursor: [hover]}
    };
    var u = new uPlot(opts, [xs, running], plotEl);
    u.coloKind = 'gantt';
    u.coloBars = bars;
    u.coloInfo = infoEl;
    infoEl.textContent = bars.length ? 'Point at a bar for the job.' : 'No job has started.';
    return register(u, plotEl);
  }

  // ---------------------------------------------------------------- grouped bar chart
  // cfg: {title, categories: [label...], groups: [{label, color, values: [per category]}],
  //       refs: [{label, value, color}] (horizontal reference lines), fmt, height, yLabel}
  function groupedBars(container, cfg) {
    var cats = cfg.categories || [];
    var k = cats.length;
    var groups = cfg.groups || [];
    var fmt = cfg.fmt || fmtCount;
    var refs = (cfg.refs || []).filter(function (r) { return isNum(r.value); });
    var xs = cats.map(function (c, i) { return i; });
    var data = [xs].concat(groups.map(function (g) {
      return xs.map(function (i) { return isNum(g.values[i]) ? g.values[i] : null; });
    }));
    var refMax = refs.reduce(function (m, r) { return Math.max(m, r.value); }, 0);
    var width = widthOf(container);
    var longest = cats.reduce(function (m, c) { return Math.max(m, String(c).length); }, 0);
    var slotPx = (width - 90) / Math.max(1, k);
    var rotate = longest * 6.5 > slotPx - 6;
    var xAxisSize = rotate ? Math.min(150, 24 + longest * 5) : 36;

    function draw(u) {
      var ctx = u.ctx, bb = u.bbox, r = uPlot.pxRatio || 1;
      ctx.save();
      ctx.beginPath();
      ctx.rect(bb.left, bb.top, bb.width, bb.height);
      ctx.clip();
      var y0 = u.valToPos(0, 'y', true);
      var ng = Math.max(1, groups.length);
      xs.forEach(function (i) {
        var left = u.valToPos(i - 0.4, 'x', true), right = u.valToPos(i + 0.4, 'x', true);
        var bw = (right - left) / ng;
        groups.forEach(function (g, j) {
          var v = u.data[j + 1][i];
          if (!isNum(v)) return;
          var y1 = u.valToPos(v, 'y', true);
          ctx.fillStyle = g.color || COLORS[j % COLORS.length];
          ctx.fillRect(left + j * bw + r, Math.min(y1, y0), Math.max(bw - 2 * r, r), Math.max(Math.abs(y0 - y1), v > 0 ? r : 0));
        });
      });
      ctx.font = Math.round(11 * r) + 'px system-ui, sans-serif';
      ctx.textAlign = 'right';
      ctx.textBaseline = 'bottom';
      refs.forEach(function (ref) {
        var y = Math.round(u.valToPos(ref.value, 'y', true)) + 0.5;
        ctx.strokeStyle = ref.color || '#111827';
        ctx.fillStyle = ref.color || '#111827';
        ctx.lineWidth = 1.5 * r;
        ctx.setLineDash([6 * r, 4 * r]);
        ctx.beginPath();
        ctx.moveTo(bb.left, y);
        ctx.lineTo(bb.left + bb.width, y);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillText(ref.label + ' ' + fmt(ref.value), bb.left + bb.width - 4 * r, y - 2 * r);
      });
      ctx.restore();
    }

    var yAxis = {size: cfg.ySize || 78, label: cfg.yLabel, values: function (u, splits) { return splits.map(cfg.axisFmt || fmt); }};
    if (cfg.incrs) yAxis.incrs = cfg.incrs;
    var series = [xSeries(false, cats)].concat(groups.map(function (g, j) {
      var c = g.color || COLORS[j % COLORS.length];
      return {label: g.label, stroke: c, fill: c, width: 0, paths: function () { return null; },
              points: {show: false}, value: legendValue(fmt)};
    }));
    var opts = {
      title: cfg.title, width: width, height: cfg.height || (230 + xAxisSize), class: 'colo-bars',
      scales: {x: {time: false, range: function () { return [-0.5, k - 0.5]; }},
               y: {range: function (u, min, max) {
                 var hi = Math.max(isNum(max) ? max : 0, refMax);
                 return [0, hi > 0 ? hi * 1.08 : 1];
               }}},
      series: series,
      axes: [{
        size: xAxisSize, rotate: rotate ? 40 : 0, grid: {show: false}, gap: 4,
        splits: function () { return xs; },
        values: function (u, splits) { return splits.map(function (s) { return text(cats[Math.round(s)]); }); }
      }, yAxis],
      legend: {live: true},
      cursor: {points: {show: false}, drag: {x: false, y: false}, y: false},
      hooks: {draw: [draw]}
    };
    var u = new uPlot(opts, data, container);
    u.coloKind = 'bars';
    return register(u, container);
  }

  global.ColoCharts = {
    DASH: DASH, COLORS: COLORS, DURATION_INCRS: DURATION_INCRS, MIB_INCRS: MIB_INCRS, STATE_COLORS: STATE_COLORS, STATE_LABELS: STATE_LABELS,
    isNum: isNum, text: text, fmtNum: fmtNum, fmtMiB: fmtMiB, fmtGiB: fmtGiB, fmtDuration: fmtDuration,
    fmtAxisDuration: fmtAxisDuration, fmtPct: fmtPct, fmtWatts: fmtWatts, fmtMJ: fmtMJ, fmtCount: fmtCount,
    fmtClock: fmtClock, fmtDateTime: fmtDateTime,
    el: el, append: append, clear: clear,
    timeSeries: timeSeries, gantt: gantt, groupedBars: groupedBars, ganttState: ganttState,
    destroy: destroy, resizeAll: resizeAll
  };
})(window);
