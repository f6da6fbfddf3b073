/* colo report: renders window.COLO_REPORT (written by `colo sim --report` and `colo report`,
 * docs/DASHBOARD.md) into the self-contained page web/report-template.html. Needs uPlot and
 * charts.js before it. Exposes window.coloReport = {charts: [...uPlot...]} and sets
 * document.body.dataset.ready = "1" when every chart is drawn. */
(function () {
  'use strict';

  var C = window.ColoCharts;
  var el = C.el, isNum = C.isNum, text = C.text;
  var charts = [];
  window.coloReport = {charts: charts};

  var METRICS = [
    {key: 'makespan_s', label: 'Makespan', fmt: C.fmtDuration, axis: C.fmtAxisDuration, incrs: C.DURATION_INCRS,
     lowerBound: true},
    {key: 'energy_mj', label: 'Energy', fmt: C.fmtMJ, axis: C.fmtMJ},
    {key: 'avg_wait_s', label: 'Average wait', fmt: C.fmtDuration, axis: C.fmtAxisDuration, incrs: C.DURATION_INCRS},
    {key: 'avg_jct_s', label: 'Average job completion time', fmt: C.fmtDuration, axis: C.fmtAxisDuration,
     incrs: C.DURATION_INCRS},
    {key: 'oom_crashes', label: 'OOM crashes', fmt: C.fmtCount, axis: C.fmtCount, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]}
  ];

  function section(title, cls) {
    var s = el('section', {className: 'card' + (cls ? ' ' + cls : '')});
    if (title) s.appendChild(el('h2', null, title));
    return s;
  }

  function chartBox(parent, cls) {
    var d = el('div', {className: 'chart ' + (cls || '')});
    parent.appendChild(d);
    return d;
  }

  function summaryTable(runs, lowerBound) {
    var head = ['Run', 'Completed', 'Makespan', 'Energy', 'Average wait', 'Average JCT', 'OOM crashes', 'Lower bound'];
    var t = el('table', {className: 'data summary'});
    t.appendChild(el('thead', null, el('tr', null, head.map(function (h, i) {
      return el('th', {className: i ? 'num' : ''}, h);
    }))));
    var body = el('tbody');
    runs.forEach(function (r) {
      var s = r.summary || {};
      var completed = isNum(s.completed) ? (isNum(s.jobs) ? s.completed + ' / ' + s.jobs : String(s.completed)) : null;
      var lb = isNum(s.lower_bound_s) ? s.lower_bound_s : lowerBound;
      body.appendChild(el('tr', null, [
        el('td', null, text(r.label)),
        el('td', {className: 'num'}, text(completed)),
        el('td', {className: 'num'}, C.fmtDuration(s.makespan_s)),
        el('td', {className: 'num'}, C.fmtMJ(s.energy_mj)),
        el('td', {className: 'num'}, C.fmtDuration(s.avg_wait_s)),
        el('td', {className: 'num'}, C.fmtDuration(s.avg_jct_s)),
        el('td', {className: 'num'}, isNum(s.oom_crashes) ? String(s.oom_crashes) : C.DASH),
        el('td', {className: 'num'}, C.fmtDuration(lb))
      ]));
    });
    t.appendChild(body);
    return t;
  }

  function lastOf(a) { return a && a.length ? a[a.length - 1] : null; }

  function renderRun(root, run, idx) {
    var s = section(text(run.label), 'run');
    s.dataset.run = String(idx);
    var sum = run.summary || {};
    // MIG (colo sim --sharing mig): one row per instance, each with its own memory.
    var slots = Array.isArray(run.slots) ? run.slots : null;
    var facts = slots ? [
      ['GPUs', text(run.physical_gpus)],
      ['MIG instances', text(slots.length)],
      ['memory per instance', slots.map(function (s) { return C.fmtMiB(s.memory_mib); })
        .filter(function (v, i, a) { return a.indexOf(v) === i; }).join(', ')]
    ] : [
      ['GPUs', text(run.gpus)],
      ['memory per GPU', C.fmtMiB(run.gpu_memory_mib)]
    ];
    facts = facts.concat([
      ['makespan', C.fmtDuration(sum.makespan_s)],
      ['energy', C.fmtMJ(sum.energy_mj)],
      ['average wait', C.fmtDuration(sum.avg_wait_s)],
      ['average JCT', C.fmtDuration(sum.avg_jct_s)],
      ['OOM crashes', text(sum.oom_crashes)]
    ]);
    s.appendChild(el('dl', {className: 'facts'}, facts.reduce(function (acc, f) {
      acc.push(el('dt', null, f[0]), el('dd', null, f[1]));
      return acc;
    }, [])));
    root.appendChild(s);

    var series = run.series || null;
    var t = series && Array.isArray(series.t) ? series.t : [];
    var tEnd = Math.max(isNum(lastOf(t)) ? lastOf(t) : 0, isNum(sum.makespan_s) ? sum.makespan_s : 0);
    // Times are from the run's start; samples may begin earlier (colod sampled before the first job).
    var tStart = Math.min(0, t.length && isNum(t[0]) ? t[0] : 0);
    var sync = 'run' + idx;
    var jobs = Array.isArray(run.jobs) ? run.jobs : [];

    s.appendChild(el('h3', null, 'Jobs per GPU'));
    if (jobs.length) {
      charts.push(C.gantt(chartBox(s, 'gantt'), {
        title: null, gpus: run.gpus, jobs: jobs, x: 'seconds', tStart: tStart, tEnd: tEnd || null, sync: sync
      }));
    } else {
      s.appendChild(el('p', {className: 'empty'}, 'No job attempts were recorded.'));
    }

    if (!t.length) {
      s.appendChild(el('p', {className: 'empty'}, 'No timeline was recorded for this run.'));
      return;
    }
    var gpus = Array.isArray(series.gpus) ? series.gpus : [];
    var left = series.gpus_left_out;
    if (left && isNum(left.count) && left.count > 0) {
      s.appendChild(el('p', {className: 'note'},
        'Memory and SM activity of the ' + text(gpus.length) + ' of ' + text(left.of) +
        ' GPUs whose memory peaked highest; ' + text(left.count) + ' more are not drawn (' + text(left.idle) +
        ' of them never held a job). The chart of jobs above shows every GPU.'));
    }
    var grid = el('div', {className: 'chart-grid'});
    s.appendChild(grid);

    // Memory: one line per GPU, the GPUs' capacity as a dashed reference.
    var memData = [t], memSeries = [];
    var slotName = function (g) {
      var s = slots && isNum(g.slot) ? slots[g.slot] : null;
      return s ? text(s.label) + ' (' + C.fmtMiB(s.memory_mib) + ')' : 'GPU ' + text(g.slot);
    };
    gpus.forEach(function (g, i) {
      memData.push(g.used_mib || []);
      memSeries.push({label: slotName(g) + ' used', color: C.COLORS[i % C.COLORS.length], fmt: C.fmtMiB});
    });
    if (isNum(run.gpu_memory_mib)) {
      memData.push(t.map(function () { return run.gpu_memory_mib; }));
      memSeries.push({label: 'capacity', color: '#6b7280', dash: [6, 4], width: 1, fmt: C.fmtMiB});
    }
    if (memSeries.length) {
      charts.push(C.timeSeries(chartBox(grid), {
        title: 'GPU memory used', x: 'seconds', step: true, sync: sync, height: 240,
        y: {min: 0, fmt: C.fmtMiB, axisFmt: C.fmtGiB, incrs: C.MIB_INCRS, size: 70}, series: memSeries, data: memData
      }));
    }

    var smData = [t], smSeries = [];
    gpus.forEach(function (g, i) {
      if (!Array.isArray(g.smact) || !g.smact.some(isNum)) return;
      smData.push(g.smact);
      smSeries.push({label: slotName(g), color: C.COLORS[i % C.COLORS.length], fmt: C.fmtPct});
    });
    if (smSeries.length) {
      charts.push(C.timeSeries(chartBox(grid), {
        title: 'SM activity (SMACT)', x: 'seconds', step: true, sync: sync, height: 240,
        y: {min: 0, max: 1, fmt: C.fmtPct}, series: smSeries, data: smData
      }));
    } else {
      grid.appendChild(el('p', {className: 'empty'}, 'No SM activity was recorded.'));
    }

    if (Array.isArray(series.queue_length) && series.queue_length.length) {
      charts.push(C.timeSeries(chartBox(grid), {
        title: 'Queue length', x: 'seconds', step: true, sync: sync, height: 200,
        y: {min: 0, fmt: C.fmtCount, atLeast: 1, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]},
        series: [{label: 'jobs waiting', color: '#ea580c', fill: 'rgba(234,88,12,0.12)', fmt: C.fmtCount}],
        data: [t, series.queue_length]
      }));
    }
  }

  // "magm" + "oracle" → "magm + oracle"; a policy label that already names its estimator stays.
  function configLabel(row) {
    var p = text(row.policy), e = row.estimator;
    if (e && e !== 'none' && p.toLowerCase().indexOf(String(e).toLowerCase()) < 0) p += ' + ' + e;
    return p;
  }

  function renderCompare(root, R) {
    var rows = R.compare;
    var s = section('Policy comparison', 'compare');
    root.appendChild(s);
    var cats = [], sharings = [];
    rows.forEach(function (r) {
      var c = configLabel(r);
      if (cats.indexOf(c) < 0) cats.push(c);
      var sh = text(r.sharing);
      if (sharings.indexOf(sh) < 0) sharings.push(sh);
    });
    var ex = R.exclusive || null;
    var lb = isNum(R.lower_bound_s) ? R.lower_bound_s : null;
    s.appendChild(el('p', {className: 'note'},
      'One bar per configuration (policy + estimator) and sharing mode. Dashed lines: the exclusive ' +
      'baseline' + (lb !== null ? ' and, for the makespan, the lower bound' : '') + '.'));
    var grid = el('div', {className: 'chart-grid wide'});
    s.appendChild(grid);
    var palette = ['#2563eb', '#ea580c', '#16a34a', '#7c3aed', '#0891b2', '#db2777'];
    METRICS.forEach(function (m) {
      var groups = sharings.map(function (sh, j) {
        return {
          label: sh, color: palette[j % palette.length],
          values: cats.map(function (c) {
            for (var i = 0; i < rows.length; i++)
              if (configLabel(rows[i]) === c && text(rows[i].sharing) === sh) return rows[i][m.key];
            return null;
          })
        };
      });
      var refs = [];
      if (ex && isNum(ex[m.key])) refs.push({label: 'exclusive', value: ex[m.key], color: '#111827'});
      if (m.lowerBound && lb !== null) refs.push({label: 'lower bound', value: lb, color: '#dc2626'});
      charts.push(C.groupedBars(chartBox(grid), {
        title: m.label, categories: cats, groups: groups, refs: refs, fmt: m.fmt, axisFmt: m.axis, incrs: m.incrs
      }));
    });

    // The same numbers as a table.
    var head = ['Policy', 'Estimator', 'Sharing'].concat(METRICS.map(function (m) { return m.label; }));
    var t = el('table', {className: 'data compare-table'});
    t.appendChild(el('thead', null, el('tr', null, head.map(function (h, i) {
      return el('th', {className: i > 2 ? 'num' : ''}, h);
    }))));
    var body = el('tbody');
    rows.forEach(function (r) {
      body.appendChild(el('tr', null, [el('td', null, text(r.policy)), el('td', null, text(r.estimator)),
                                       el('td', null, text(r.sharing))].concat(METRICS.map(function (m) {
        return el('td', {className: 'num'}, m.fmt(r[m.key]));
      }))));
    });
    if (ex) {
      body.appendChild(el('tr', {className: 'reference'}, [el('td', null, 'exclusive (reference)'), el('td', null, C.DASH),
                                                       el('td', null, C.DASH)].concat(METRICS.map(function (m) {
        return el('td', {className: 'num'}, m.fmt(ex[m.key]));
      }))));
    }
    var details = el('details', {className: 'table-details'}, [el('summary', null, 'All numbers')]);
    details.appendChild(el('div', {className: 'table-scroll'}, t));
    s.appendChild(details);
  }

  function fail(root, message) {
    root.appendChild(el('div', {className: 'error', role: 'alert'}, message));
    document.body.dataset.error = message;
  }

  function render() {
    var root = document.getElementById('report');
    C.clear(root);
    var R = window.COLO_REPORT;
    if (!R || typeof R !== 'object') {
      fail(root, 'This page carries no report data (window.COLO_REPORT is missing).');
      return;
    }
    document.title = text(R.title);
    var header = el('header', {className: 'report-head'}, [el('h1', null, text(R.title))]);
    if (R.generated_by) header.appendChild(el('p', {className: 'generated'}, ['Generated by ', el('code', null, text(R.generated_by))]));
    root.appendChild(header);

    var runs = Array.isArray(R.runs) ? R.runs : [];
    var s = section('Summary', 'summary-card');
    if (runs.length) s.appendChild(el('div', {className: 'table-scroll'}, summaryTable(runs, R.lower_bound_s)));
    else s.appendChild(el('p', {className: 'empty'}, 'The report holds no run.'));
    root.appendChild(s);

    if (Array.isArray(R.compare) && R.compare.length) renderCompare(root, R);
    runs.forEach(function (run, i) { renderRun(root, run, i); });
    document.body.dataset.ready = '1';
  }

  try {
    render();
  } catch (e) {
    fail(document.getElementById('report'), 'The report could not be drawn: ' + (e && e.message ? e.message : String(e)));
    throw e;
  }
})();
