/* colo dashboard: polls colod's read-only JSON API (docs/DASHBOARD.md) every 2 s and draws the
 * GPUs (memory used / reserved by estimates / total, SMACT, power), which jobs share each GPU,
 * the queue, recent OOM / recovery / GPU events, and a job page at #job/<id>.
 * For tests: window.coloDashboard = {charts, lastOverview, lastSamples}; document.body.dataset.ready
 * is "1" after the first overview is drawn; the job page's element carries data-state
 * ("loading" | "loaded" | "error") and data-job-id. */
(function () {
  'use strict';

  var C = window.ColoCharts;
  var el = C.el, text = C.text, isNum = C.isNum;

  var POLL_MS = 2000;
  var WINDOW_S = 15 * 60;        // the samples kept (the API's default window)
  var FETCH_TIMEOUT_MS = 10000;
  var ACTIVE = ['queued', 'estimating', 'running', 'recovering'];
  var WAITING = ['queued', 'estimating', 'recovering'];

  var state = {
    overview: null,
    samples: {},            // slot -> {t, used, reserved, smact, power}
    samplesSince: null,     // the newest sample time seen
    gpuViews: {},           // slot -> {card, mem, act, ...}
    gpuKey: '',
    job: null,              // {id, chart, data}
    lastOk: null,
    timer: null,
    jobFetchSeq: 0
  };

  var api = {charts: [], lastOverview: null, lastSamples: null};
  window.coloDashboard = api;

  function $(id) { return document.getElementById(id); }

  function refreshChartList() {
    var list = [];
    Object.keys(state.gpuViews).forEach(function (k) {
      var v = state.gpuViews[k];
      list.push(v.mem, v.act);
    });
    if (state.job && state.job.chart) list.push(state.job.chart);
    api.charts.length = 0;
    Array.prototype.push.apply(api.charts, list);
  }

  // ---------------------------------------------------------------- fetching
  function HttpError(status, message) {
    var e = new Error(message);
    e.status = status;
    return e;
  }

  function getJSON(url) {
    var ctl = typeof AbortController === 'function' ? new AbortController() : null;
    var timer = ctl ? setTimeout(function () { ctl.abort(); }, FETCH_TIMEOUT_MS) : null;
    return fetch(url, {cache: 'no-store', headers: {Accept: 'application/json'}, signal: ctl ? ctl.signal : undefined})
      .catch(function (e) {
        throw HttpError(0, e && e.name === 'AbortError' ? 'colod did not answer within ' + FETCH_TIMEOUT_MS / 1000 + ' s'
                                                         : 'cannot reach colod (' + (e && e.message ? e.message : e) + ')');
      })
      .then(function (r) {
        return r.text().then(function (body) {
          var data = null;
          try { data = body ? JSON.parse(body) : null; } catch (e) { data = null; }
          if (!r.ok) {
            var msg = data && typeof data.error === 'string' ? data.error : (r.statusText || 'request failed');
            throw HttpError(r.status, msg);
          }
          if (data === null || typeof data !== 'object') throw HttpError(r.status, 'the answer to ' + url + ' is not JSON');
          return data;
        });
      })
      .then(function (data) {
        if (timer) clearTimeout(timer);
        return data;
      }, function (e) {
        if (timer) clearTimeout(timer);
        throw e;
      });
  }

  function errorText(e) {
    var m = e && e.message ? e.message : String(e);
    return e && e.status ? 'HTTP ' + e.status + ': ' + m : m;
  }

  // ---------------------------------------------------------------- small renderers
  function stateBadge(s) {
    var cls = {running: 'info', queued: 'warn', estimating: 'warn', recovering: 'warn', done: 'ok', failed: 'bad',
               oom: 'bad', cancelled: ''}[s];
    return el('span', {className: 'badge ' + (cls || ''), dataset: {state: text(s)}}, text(s));
  }

  function jobLink(id) {
    return isNum(id) ? el('a', {href: '#job/' + id}, String(id)) : C.DASH;
  }

  function td(content, cls) { return el('td', cls ? {className: cls} : null, content); }

  function fillBody(table, rows, emptyEl) {
    var body = table.tBodies[0];
    C.clear(body);
    rows.forEach(function (r) { body.appendChild(r); });
    if (emptyEl) emptyEl.hidden = rows.length > 0;
    table.hidden = rows.length === 0;
  }

  function estimateText(j) {
    return C.fmtMiB(j.need_mib);
  }

  // ---------------------------------------------------------------- samples
  function mergeSamples(resp) {
    api.lastSamples = resp;
    (resp.gpus || []).forEach(function (g) {
      var s = state.samples[g.slot];
      if (!s) s = state.samples[g.slot] = {t: [], used: [], reserved: [], smact: [], power: []};
      var t = g.t || [];
      var last = s.t.length ? s.t[s.t.length - 1] : -Infinity;
      for (var i = 0; i < t.length; i++) {
        if (!isNum(t[i]) || t[i] <= last) continue;
        last = t[i];
        s.t.push(t[i]);
        s.used.push(num(g.used_mib, i));
        s.reserved.push(num(g.reserved_mib, i));
        s.smact.push(num(g.smact, i));
        s.power.push(num(g.power_w, i));
      }
      if (s.t.length) {
        var cutoff = s.t[s.t.length - 1] - WINDOW_S, drop = 0;
        while (drop < s.t.length && s.t[drop] < cutoff) drop++;
        if (drop) ['t', 'used', 'reserved', 'smact', 'power'].forEach(function (k) { s[k].splice(0, drop); });
        if (state.samplesSince === null || last > state.samplesSince) state.samplesSince = last;
      }
    });
  }

  function num(a, i) { return a && isNum(a[i]) ? a[i] : null; }

  // ---------------------------------------------------------------- GPUs
  function buildGpuViews(gpus) {
    Object.keys(state.gpuViews).forEach(function (k) {
      C.destroy(state.gpuViews[k].mem);
      C.destroy(state.gpuViews[k].act);
    });
    state.gpuViews = {};
    var root = C.clear($('gpus'));
    if (!gpus.length) root.appendChild(el('p', {className: 'empty'}, 'colod manages no GPU.'));
    gpus.forEach(function (g) {
      var title = el('h2', null, 'GPU ' + text(g.slot));
      var name = el('span', {className: 'gpu-name'});
      var badges = el('span', {className: 'gpu-badges'});
      var uuid = el('span', {className: 'uuid'});
      var stats = el('div', {className: 'gpu-stats'});
      var reservedBar = el('div', {className: 'reserved'});
      var usedBar = el('div', {className: 'used'});
      var memMount = el('div', {className: 'chart'});
      var actMount = el('div', {className: 'chart'});
      var card = el('div', {className: 'gpu-card', dataset: {gpuSlot: String(g.slot)}}, [
        el('div', {className: 'gpu-head'}, [title, name, badges, uuid]),
        stats,
        el('div', {className: 'membar', title: 'used (dark) and reserved by estimates (light) of the total'}, [reservedBar, usedBar]),
        el('div', {className: 'chart-grid'}, [memMount, actMount])
      ]);
      root.appendChild(card);
      if (gpus.length > 1) root.appendChild(el('hr', {className: 'sep'}));
      var sync = 'gpus';
      var mem = C.timeSeries(memMount, {
        title: 'Memory', x: 'time', height: 200, sync: sync,
        y: {min: 0, fmt: C.fmtMiB, axisFmt: C.fmtGiB, incrs: C.MIB_INCRS, size: 70},
        series: [
          {label: 'used', color: '#2563eb', fill: 'rgba(37,99,235,0.10)'},
          {label: 'reserved by estimates', color: '#7c3aed', dash: [6, 3]},
          {label: 'total', color: '#6b7280', width: 1, dash: [2, 3]}
        ],
        data: [[], [], [], []]
      });
      var act = C.timeSeries(actMount, {
        title: 'SM activity and power', x: 'time', height: 200, sync: sync,
        y: {min: 0, max: 1, fmt: C.fmtPct, label: 'SMACT'},
        y2: {min: 0, atLeast: 100, fmt: C.fmtWatts, label: 'power'},
        series: [
          {label: 'SMACT', color: '#16a34a', scale: 'y', fmt: C.fmtPct},
          {label: 'power', color: '#ea580c', scale: 'y2', fmt: C.fmtWatts}
        ],
        data: [[], [], []]
      });
      state.gpuViews[g.slot] = {card: card, name: name, badges: badges, uuid: uuid, stats: stats,
                                reservedBar: reservedBar, usedBar: usedBar, mem: mem, act: act};
    });
    refreshChartList();
  }

  function renderGpus(ov) {
    var gpus = Array.isArray(ov.gpus) ? ov.gpus : [];
    var key = gpus.map(function (g) { return g.slot + ':' + g.uuid; }).join(',');
    if (key !== state.gpuKey || !Object.keys(state.gpuViews).length) {
      state.gpuKey = key;
      buildGpuViews(gpus);
    }
    gpus.forEach(function (g) {
      var v = state.gpuViews[g.slot];
      if (!v) return;
      v.name.textContent = text(g.name);
      v.uuid.textContent = text(g.uuid);
      C.clear(v.badges);
      v.badges.appendChild(g.healthy === false ? el('span', {className: 'badge bad'}, 'unhealthy')
                                               : el('span', {className: 'badge ok'}, 'healthy'));
      if (g.drained) v.badges.appendChild(el('span', {className: 'badge warn'}, 'drained'));
      var nJobs = Array.isArray(g.jobs) ? g.jobs.length : 0;
      if (nJobs > 1) v.badges.appendChild(el('span', {className: 'badge shared'}, 'shared by ' + nJobs + ' jobs'));
      C.clear(v.stats);
      [['used', C.fmtMiB(g.used_mib)], ['reserved', C.fmtMiB(g.reserved_mib)], ['total', C.fmtMiB(g.total_mib)],
       ['SMACT', C.fmtPct(g.smact)], ['SM occupancy', C.fmtPct(g.smocc)], ['utilization', C.fmtPct(g.gpu_util)],
       ['power', C.fmtWatts(g.power_w)], ['jobs', String(nJobs)]].forEach(function (p) {
        v.stats.appendChild(el('span', null, [p[0] + ' ', el('b', null, p[1])]));
      });
      var total = isNum(g.total_mib) && g.total_mib > 0 ? g.total_mib : null;
      v.usedBar.style.width = total && isNum(g.used_mib) ? Math.min(100, 100 * g.used_mib / total) + '%' : '0';
      v.reservedBar.style.width = total && isNum(g.reserved_mib) ? Math.min(100, 100 * g.reserved_mib / total) + '%' : '0';

      var s = state.samples[g.slot] || {t: [], used: [], reserved: [], smact: [], power: []};
      var totals = s.t.map(function () { return isNum(g.total_mib) ? g.total_mib : null; });
      v.mem.setData([s.t.slice(), s.used.slice(), s.reserved.slice(), totals]);
      v.act.setData([s.t.slice(), s.smact.slice(), s.power.slice()]);
    });
  }

  // ---------------------------------------------------------------- tables
  function jobsById(ov) {
    var m = {};
    (ov.jobs || []).forEach(function (j) { m[j.id] = j; });
    return m;
  }

  function renderCounts(ov) {
    var root = C.clear($('counts'));
    var counts = ov.counts || {};
    var order = ['queued', 'estimating', 'running', 'recovering', 'done', 'failed', 'cancelled'];
    Object.keys(counts).forEach(function (k) { if (order.indexOf(k) < 0) order.push(k); });
    order.forEach(function (k) {
      root.appendChild(el('div', {className: 'count', dataset: {state: k}}, [
        el('span', {className: 'n'}, isNum(counts[k]) ? String(counts[k]) : '0'), el('span', {className: 'k'}, k)]));
    });
  }

  function renderSharing(ov) {
    var byId = jobsById(ov);
    var rows = (ov.gpus || []).map(function (g) {
      var ids = Array.isArray(g.jobs) ? g.jobs : [];
      var chips = ids.length ? ids.map(function (id) {
        var j = byId[id] || {};
        return el('span', {className: 'job-chip', dataset: {jobId: String(id)}}, [
          jobLink(id), ' ', text(j.name), el('span', {className: 'muted'}, ' (' + C.fmtMiB(j.need_mib) + ')')]);
      }) : [el('span', {className: 'muted'}, 'idle')];
      var gpuCell = ['GPU ' + text(g.slot)];
      if (ids.length > 1) gpuCell.push(' ', el('span', {className: 'badge shared'}, 'shared'));
      return el('tr', {dataset: {gpuSlot: String(g.slot), jobs: ids.join(',')}}, [
        td(gpuCell), td(String(ids.length), 'num'), td(chips), td(C.fmtMiB(g.reserved_mib), 'num'),
        td(C.fmtMiB(g.used_mib), 'num'), td(C.fmtMiB(g.total_mib), 'num')]);
    });
    fillBody($('sharing-table'), rows, null);
  }

  function renderQueue(ov) {
    var waiting = (ov.jobs || []).filter(function (j) { return WAITING.indexOf(j.state) >= 0; });
    waiting.sort(function (a, b) { return (a.submit_time || 0) - (b.submit_time || 0) || a.id - b.id; });
    var rows = waiting.map(function (j) {
      return el('tr', {dataset: {jobId: String(j.id), state: text(j.state)}}, [
        td(jobLink(j.id)), td(text(j.name)), td(text(j.user)), td(stateBadge(j.state)),
        td(C.fmtDuration(j.wait_s), 'num'), td(estimateText(j), 'num'), td(text(j.need_source)),
        td(text(j.attempts), 'num'), td(text(j.waiting_reason), 'reason')]);
    });
    fillBody($('queue-table'), rows, $('queue-empty'));
  }

  function renderJobs(ov) {
    var jobs = (ov.jobs || []).filter(function (j) { return WAITING.indexOf(j.state) < 0; });
    jobs.sort(function (a, b) {
      var aa = ACTIVE.indexOf(a.state) >= 0, ba = ACTIVE.indexOf(b.state) >= 0;
      if (aa !== ba) return aa ? -1 : 1;
      if (aa) return a.id - b.id;
      return (b.end_time || 0) - (a.end_time || 0) || b.id - a.id;
    });
    var now = isNum(ov.time) ? ov.time : Date.now() / 1000;
    var rows = jobs.map(function (j) {
      var ran = isNum(j.start_time) ? (isNum(j.end_time) ? j.end_time : now) - j.start_time : null;
      var gpus = Array.isArray(j.gpus) && j.gpus.length ? j.gpus.join(', ') : null;
      return el('tr', {dataset: {jobId: String(j.id), state: text(j.state)}}, [
        td(jobLink(j.id)), td(text(j.name)), td(text(j.user)), td(stateBadge(j.state)), td(text(gpus)),
        td(estimateText(j), 'num'), td(C.fmtMiB(j.peak_mib), 'num'), td(C.fmtDuration(j.wait_s), 'num'),
        td(C.fmtDuration(ran), 'num'), td(text(j.attempts), 'num'), td(C.fmtClock(j.end_time))]);
    });
    fillBody($('jobs-table'), rows, $('jobs-empty'));
  }

  var IMPORTANT_KINDS = ['attempt', 'gpu', 'cancel', 'rejected', 'probe-failed', 'slot'];
  var BAD_RE = /\boom\b|out of memory|fail|lost|unhealthy|error|xid/i;
  var WARN_RE = /recover|retry|drain|cancel|reject|checkpoint|stopped/i;

  function eventRows(events, all) {
    return events.filter(function (e) {
      return all || IMPORTANT_KINDS.indexOf(e.kind) >= 0 || BAD_RE.test(e.message || '') || WARN_RE.test(e.message || '');
    }).map(function (e) {
      var msg = text(e.message);
      var cls = BAD_RE.test(msg) ? 'ev-bad' : (WARN_RE.test(msg) ? 'ev-warn' : '');
      return el('tr', {className: cls, dataset: {kind: text(e.kind)}}, [
        td(C.fmtDateTime(e.time)), td(jobLink(e.job_id)), td(text(e.kind)), td(msg, 'msg')]);
    });
  }

  function renderEvents(ov) {
    var all = $('all-events').checked;
    $('events-empty').textContent = all ? 'No event.' : 'No OOM, recovery or GPU event.';
    fillBody($('events-table'), eventRows(Array.isArray(ov.events) ? ov.events : [], all), $('events-empty'));
  }

  function renderHeader(ov) {
    $('host').textContent = text(ov.host);
    var vis = $('visibility');
    vis.hidden = false;
    if (ov.visibility === 'anonymous') {
      vis.className = 'badge warn';
      vis.textContent = 'anonymous view';
      vis.title = 'Over TCP colod cannot tell who you are: job names, users and job pages are hidden ' +
                  'unless the admin sets [web] public_job_details = true.';
    } else {
      vis.className = 'badge ok';
      vis.textContent = 'all details';
      vis.title = 'Job names, users and job pages are shown.';
    }
    $('updated').textContent = 'updated ' + C.fmtClock(ov.time);
  }

  function renderOverview(ov) {
    state.overview = ov;
    api.lastOverview = ov;
    renderHeader(ov);
    renderCounts(ov);
    renderGpus(ov);
    renderSharing(ov);
    renderQueue(ov);
    renderJobs(ov);
    renderEvents(ov);
  }

  // ---------------------------------------------------------------- job page
  function jobView() { return $('job-view'); }

  function routeJobId() {
    var m = /^#job\/(\d+)$/.exec(window.location.hash || '');
    return m ? parseInt(m[1], 10) : null;
  }

  function dropJobChart() {
    if (state.job && state.job.chart) {
      C.destroy(state.job.chart);
      state.job.chart = null;
    }
  }

  function showRoute() {
    var id = routeJobId();
    var v = jobView();
    if (id === null) {
      dropJobChart();
      state.job = null;
      v.hidden = true;
      C.clear(v);
      delete v.dataset.state;
      delete v.dataset.jobId;
      $('overview-view').hidden = false;
      refreshChartList();
      C.resizeAll();
      return;
    }
    $('overview-view').hidden = true;
    v.hidden = false;
    if (!state.job || state.job.id !== id) {
      dropJobChart();
      state.job = {id: id, chart: null, mount: null};
      C.clear(v);
      v.appendChild(el('p', null, el('a', {href: '#'}, '\u2190 Overview')));
      v.appendChild(el('h2', null, 'Job ' + id));
      v.appendChild(el('p', {className: 'loading'}, 'Loading…'));
      v.dataset.state = 'loading';
      v.dataset.jobId = String(id);
      refreshChartList();
    }
    fetchJob(id);
  }

  function fetchJob(id) {
    var seq = ++state.jobFetchSeq;
    getJSON('/api/v1/jobs/' + id).then(function (data) {
      if (seq !== state.jobFetchSeq || !state.job || state.job.id !== id) return;
      renderJob(id, data);
    }, function (e) {
      if (seq !== state.jobFetchSeq || !state.job || state.job.id !== id) return;
      renderJobError(id, e);
    });
  }

  function renderJobError(id, e) {
    var v = jobView();
    dropJobChart();
    C.clear(v);
    v.appendChild(el('p', null, el('a', {href: '#'}, '\u2190 Overview')));
    v.appendChild(el('h2', null, 'Job ' + id));
    v.appendChild(el('div', {className: 'error', role: 'alert', id: 'job-error'},
                     (e && e.status ? 'HTTP ' + e.status + ': ' : '') + (e && e.message ? e.message : String(e))));
    v.dataset.state = 'error';
    v.dataset.status = String(e && e.status ? e.status : 0);
    refreshChartList();
  }

  function facts(pairs) {
    return el('dl', {className: 'facts'}, pairs.reduce(function (acc, p) {
      acc.push(el('dt', null, p[0]), el('dd', null, p[1]));
      return acc;
    }, []));
  }

  function renderJob(id, data) {
    var v = jobView();
    var j = data.job || {};
    // In a job's page "attempts" is the list of attempts (in the overview, their number).
    var attempts = Array.isArray(j.attempts) ? j.attempts : [];
    var nAttempts = Array.isArray(j.attempts) ? j.attempts.length : j.attempts;
    var mem = data.memory || {};
    var t = Array.isArray(mem.t) ? mem.t : [];
    var mib = Array.isArray(mem.mib) ? mem.mib : [];
    var events = Array.isArray(data.events) ? data.events : [];
    var now = state.overview && isNum(state.overview.time) ? state.overview.time : Date.now() / 1000;

    // Keep the chart (and its zoom) across refreshes; rebuild the rest.
    var keepChart = state.job.chart;
    var chartMount = state.job.mount;
    if (keepChart && chartMount && chartMount.parentNode) chartMount.parentNode.removeChild(chartMount);
    C.clear(v);
    v.appendChild(el('p', null, el('a', {href: '#'}, '\u2190 Overview')));
    v.appendChild(el('h2', null, ['Job ' + id + ' \u00b7 ', el('span', {id: 'job-name'}, text(j.name)), ' ', stateBadge(j.state)]));

    var ran = isNum(j.start_time) ? (isNum(j.end_time) ? j.end_time : now) - j.start_time : null;
    var info = el('section', {className: 'card'}, [facts([
      ['user', text(j.user)], ['state', text(j.state)],
      ['GPUs', text(Array.isArray(j.gpus) && j.gpus.length ? j.gpus.join(', ') : null)], ['attempts', text(nAttempts)],
      ['submitted', C.fmtDateTime(j.submit_time)], ['started', C.fmtDateTime(j.start_time)],
      ['ended', C.fmtDateTime(j.end_time)], ['waited', C.fmtDuration(j.wait_s)],
      ['ran', C.fmtDuration(ran)], ['observed peak', C.fmtMiB(j.peak_mib)],
      ['estimate', C.fmtMiB(j.need_mib) + (j.need_source ? ' (' + j.need_source + ')' : '')],
      ['waiting because', text(j.waiting_reason)]
    ])]);
    v.appendChild(info);

    var memCard = el('section', {className: 'card', id: 'job-memory'}, [el('h2', null, 'Memory: observed vs estimate')]);
    v.appendChild(memCard);
    if (!t.length) {
      if (keepChart) { C.destroy(keepChart); state.job.chart = keepChart = null; }
      memCard.appendChild(el('p', {className: 'empty'}, 'No memory sample of this job yet.'));
    } else {
      // The reserve in force at each sample: that of the attempt running then.
      var reserve = t.map(function (x) {
        for (var i = attempts.length - 1; i >= 0; i--) {
          var a = attempts[i];
          if (isNum(a.start_time) && a.start_time <= x && (!isNum(a.end_time) || x <= a.end_time)) {
            return isNum(a.reserve_mib) ? a.reserve_mib : null;
          }
        }
        return null;
      });
      var need = t.map(function () { return isNum(j.need_mib) ? j.need_mib : null; });
      var chartData = [t.slice(), mib.map(function (m) { return isNum(m) ? m : null; }), need, reserve];
      if (keepChart) {
        memCard.appendChild(chartMount);
        keepChart.setData(chartData);
      } else {
        chartMount = el('div', {className: 'chart'});
        memCard.appendChild(chartMount);
        state.job.mount = chartMount;
        state.job.chart = C.timeSeries(chartMount, {
          title: null, x: 'time', height: 260, step: false,
          y: {min: 0, fmt: C.fmtMiB, axisFmt: C.fmtGiB, incrs: C.MIB_INCRS, size: 70},
          series: [
            {label: 'observed', color: '#2563eb', fill: 'rgba(37,99,235,0.10)'},
            {label: 'estimate', color: '#dc2626', dash: [8, 4], width: 2},
            {label: 'reserved (attempt)', color: '#7c3aed', dash: [3, 3]}
          ],
          data: chartData
        });
      }
    }

    var est = el('section', {className: 'card', id: 'job-estimate'}, [
      el('h2', null, 'Estimate: ' + C.fmtMiB(j.need_mib) + (j.need_source ? ' from ' + j.need_source : '')),
      el('pre', {className: 'explanation'}, text(j.need_explanation))]);
    v.appendChild(est);

    var atRows = attempts.map(function (a) {
      var dur = isNum(a.start_time) ? (isNum(a.end_time) ? a.end_time : now) - a.start_time : null;
      return el('tr', {dataset: {attempt: text(a.n)}}, [
        td(text(a.n), 'num'), td(text(Array.isArray(a.slots) && a.slots.length ? a.slots.join(', ') : null)),
        td(C.fmtDateTime(a.start_time)), td(C.fmtDateTime(a.end_time)), td(C.fmtDuration(dur), 'num'),
        td(text(a.outcome)), td(C.fmtMiB(a.peak_mib), 'num'), td(C.fmtMiB(a.reserve_mib), 'num'),
        td(text(a.evidence), 'msg')]);
    });
    var atTable = el('table', {className: 'data', id: 'attempts-table'}, [
      el('thead', null, el('tr', null, ['#', 'GPUs', 'Started', 'Ended', 'Ran', 'Outcome', 'Peak', 'Reserved', 'Evidence']
        .map(function (h, i) { return el('th', {className: [0, 4, 6, 7].indexOf(i) >= 0 ? 'num' : ''}, h); }))),
      el('tbody', null, atRows)]);
    v.appendChild(el('section', {className: 'card'}, [el('h2', null, 'Attempts'),
      atRows.length ? el('div', {className: 'table-scroll'}, atTable) : el('p', {className: 'empty'}, 'Not started yet.')]));

    var evRows = eventRows(events, true);
    var evTable = el('table', {className: 'data', id: 'job-events-table'}, [
      el('thead', null, el('tr', null, ['Time', 'Job', 'Kind', 'Message'].map(function (h) { return el('th', null, h); }))),
      el('tbody', null, evRows)]);
    v.appendChild(el('section', {className: 'card'}, [el('h2', null, 'Events'),
      evRows.length ? el('div', {className: 'table-scroll'}, evTable) : el('p', {className: 'empty'}, 'No event.')]));

    v.dataset.state = 'loaded';
    delete v.dataset.status;
    refreshChartList();
  }

  // ---------------------------------------------------------------- polling
  function setStatus(message) {
    var s = $('status');
    if (message) {
      s.textContent = message;
      s.hidden = false;
    } else {
      s.hidden = true;
      s.textContent = '';
    }
  }

  function tick() {
    state.timer = null;
    var samplesUrl = '/api/v1/gpu-samples' + (state.samplesSince !== null ? '?since=' + state.samplesSince : '');
    Promise.all([getJSON('/api/v1/overview'), getJSON(samplesUrl)]).then(function (res) {
      mergeSamples(res[1]);
      renderOverview(res[0]);
      state.lastOk = res[0].time;
      setStatus(null);
      document.body.dataset.ready = '1';
    }).catch(function (e) {
      setStatus('Cannot update the dashboard: ' + errorText(e) +
                (state.lastOk ? ' \u2014 showing the state of ' + C.fmtClock(state.lastOk) + '.' : '.'));
      if (window.console) console.warn('colo dashboard: update failed:', errorText(e));
    }).then(function () {
      if (state.job) fetchJob(state.job.id);
      state.timer = setTimeout(tick, POLL_MS);
    });
  }

  $('all-events').addEventListener('change', function () { if (state.overview) renderEvents(state.overview); });
  window.addEventListener('hashchange', showRoute);
  if (routeJobId() !== null) showRoute();
  tick();
})();
