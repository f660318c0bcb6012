// dashboard.js - spotrund's live dashboard.  Plain JS, no dependencies,
// nothing fetched from anywhere but this daemon.
//
// The admin token comes from the URL fragment (#token=...), which browsers
// never send to the server; it is kept in sessionStorage for reloads and
// sent as a bearer token to the /v1 API.  Every value from the API is put
// into the page with textContent, never as HTML.
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const frag = new URLSearchParams(location.hash.slice(1));
  let token = frag.get('token') || sessionStorage.getItem('spotrun.token') || '';
  if (frag.get('token')) {
    sessionStorage.setItem('spotrun.token', token);
    history.replaceState(null, '', location.pathname);
  }

  const $ = (id) => document.getElementById(id);
  // one money format, as spotrun's tables: dollars and cents
  const usd = (micros) => (micros == null ? '–' :
    (micros < 0 ? '-$' : '$') + (Math.abs(micros) / 1e6).toFixed(2));
  const hours = (s) => (s >= 3600 ? (s / 3600).toFixed(1) + ' h' :
    Math.round(s / 60) + ' min');

  async function api(path) {
    const r = await fetch(path, { headers: { Authorization: 'Bearer ' + token } });
    if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
    return r.json();
  }

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text == null ? '–' : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function fill(tbody, rows, ncols, empty) {
    tbody.replaceChildren();
    if (rows.length === 0) {
      const tr = document.createElement('tr');
      const td = cell(tr, empty, 'empty');
      td.colSpan = ncols;
      tbody.appendChild(tr);
    }
    for (const r of rows) tbody.appendChild(r);
  }

  function jobRow(j, cost) {
    const tr = document.createElement('tr');
    tr.dataset.jobId = j.id;
    tr.dataset.state = j.state;
    cell(tr, j.id);
    cell(tr, j.name, 'job-name');
    cell(tr, j.state, 'state state-' + j.state);
    cell(tr, j.total_steps ? `${j.step ?? 0}/${j.total_steps}` : (j.step ?? '–'));
    const p = j.placement;
    cell(tr, p ? `${p.cloud}/${p.zone || p.region} ${p.instance_type}${p.spot ? ' spot' : ''}` : '–');
    cell(tr, j.preemptions ?? 0);
    cell(tr, usd(cost ? cost.cost_micros : j.cost_micros));
    // a FAILED or CANCELLED job saved nothing: its cost is waste
    if (cost && cost.failed_jobs > 0) {
      cell(tr, 'waste ' + usd(cost.failed_cost_micros), 'negative');
    } else {
      const saved = cost ? cost.savings_vs_list_micros : null;
      cell(tr, saved != null ? usd(saved) : '–', saved != null && saved < 0 ? 'negative' : '');
    }
    // the daemon's verdict (job view "deadline"), never worked out here
    const d = j.deadline;
    let dl = '–', cls = '';
    if (d && d.state === 'missed') {
      dl = 'MISSED by ' + hours(d.late_s); cls = 'deadline-missed';
    } else if (d && d.state === 'at_risk') {
      dl = 'at risk: done ~' + (d.projected_finish_at || '?').slice(5, 16).replace('T', ' ');
      cls = 'deadline-risk';
    } else if (d && d.state === 'on_track') {
      dl = hours(Math.max(0, j.sim_deadline_s - j.sim_elapsed_s)) + ' left, on track';
    } else if (d) {
      dl = d.state.replace('_', ' ');
    }
    const td = cell(tr, dl, cls);
    if (d) td.dataset.deadline = d.state;
    return tr;
  }

  // one team of GET /v1/cost?by=team: its own cost, its share of the
  // shared costs (control plane, idle reserved capacity) and both
  function teamRow(g) {
    const tr = document.createElement('tr');
    tr.dataset.team = g.key;
    cell(tr, g.key);
    cell(tr, usd(g.cost_micros));
    cell(tr, usd(g.shared_cost_micros));
    cell(tr, usd(g.allocated_cost_micros));
    cell(tr, (g.gpu_hours || 0).toFixed(1));
    const saved = g.savings_vs_list_micros;
    cell(tr, usd(saved), saved < 0 ? 'negative' : '');
    return tr;
  }

  // "12 llama-ft": a job's id and, when known, its name
  function jobLabel(id, names) {
    return names[id] ? `${id} ${names[id]}` : id;
  }

  function nodeRow(n, names) {
    const tr = document.createElement('tr');
    tr.dataset.state = n.state;
    cell(tr, n.id);
    cell(tr, jobLabel(n.job_id, names));
    cell(tr, n.rank);
    cell(tr, n.state, 'state state-' + n.state);
    cell(tr, `${n.cloud}/${n.zone || n.region}/${n.instance_type}`);
    cell(tr, n.spot ? 'spot' : 'on-demand');
    cell(tr, usd(n.price_micros_per_hour));
    const u = n.gpu_util != null ? n.gpu_util : n.cpu_util;
    cell(tr, u == null ? '–' : Math.round(u * 100) + '%');
    cell(tr, n.workload_state);
    return tr;
  }

  function drawChart(points) {
    const cv = $('costchart');
    const g = cv.getContext('2d');
    const W = cv.width, H = cv.height, L = 60, B = 24, T = 10, R = 10;
    g.clearRect(0, 0, W, H);
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = '#6b7585';
    if (points.length === 0) {
      g.fillText('no billing yet', W / 2 - 30, H / 2);
      return;
    }
    let c = 0, l = 0;
    const cum = points.map((p) => {
      c += p.cost_micros; l += p.list_cost_micros;
      return { t: Date.parse(p.t), c: c / 1e6, l: l / 1e6 };
    });
    const t0 = cum[0].t, t1 = Math.max(cum[cum.length - 1].t, t0 + 1);
    const ymax = Math.max(cum[cum.length - 1].l, cum[cum.length - 1].c, 1e-6);
    const x = (t) => L + (W - L - R) * (t - t0) / (t1 - t0);
    const y = (v) => H - B - (H - B - T) * v / ymax;
    g.strokeStyle = '#dfe3ea';
    g.beginPath(); g.moveTo(L, T); g.lineTo(L, H - B); g.lineTo(W - R, H - B); g.stroke();
    g.fillText('$' + ymax.toFixed(2), 4, T + 8);
    g.fillText('$0', 4, H - B);
    g.fillText(new Date(t0).toISOString().slice(11, 19), L, H - 6);
    g.fillText(new Date(t1).toISOString().slice(11, 19), W - R - 48, H - 6);
    for (const [key, color] of [['l', '#9ca3af'], ['c', '#2563eb']]) {
      g.strokeStyle = color; g.lineWidth = 2; g.beginPath();
      cum.forEach((p, i) => (i ? g.lineTo(x(p.t), y(p[key])) : g.moveTo(x(p.t), y(p[key]))));
      g.stroke();
    }
  }

  function drawTimeline(events, names) {
    const svg = $('timeline');
    const NS = 'http://www.w3.org/2000/svg';
    const W = 640, H = 220, L = 20, R = 20;
    svg.replaceChildren();
    const axis = document.createElementNS(NS, 'line');
    Object.entries({ x1: L, x2: W - R, y1: H / 2, y2: H / 2, stroke: '#9ca3af' })
      .forEach(([k, v]) => axis.setAttribute(k, v));
    svg.appendChild(axis);
    if (events.length === 0) {
      const t = document.createElementNS(NS, 'text');
      t.setAttribute('x', W / 2 - 50); t.setAttribute('y', H / 2 - 10);
      t.setAttribute('fill', '#6b7585');
      t.textContent = 'no preemptions yet';
      svg.appendChild(t);
      return;
    }
    const ts = events.map((e) => Date.parse(e.t));
    const t0 = Math.min(...ts), t1 = Math.max(...ts, t0 + 1);
    events.forEach((e, i) => {
      const c = document.createElementNS(NS, 'circle');
      const pre = e.kind === 'preemption';
      c.setAttribute('cx', L + (W - L - R) * (ts[i] - t0) / (t1 - t0));
      c.setAttribute('cy', H / 2 + (pre ? -18 : 18));
      c.setAttribute('r', 6);
      c.setAttribute('fill', pre ? '#c53030' : '#1f8a4c');
      c.setAttribute('class', 'tl-' + e.kind);
      const title = document.createElementNS(NS, 'title');
      title.textContent = `${e.t} job ${jobLabel(e.job_id, names)} ${e.kind} ${e.pool}` +
        (pre ? ` lost ${e.value_s.toFixed(0)} s (${usd(e.lost_work_micros)})`
             : ` downtime ${e.value_s.toFixed(0)} s`);
      c.appendChild(title);
      svg.appendChild(c);
    });
  }

  async function refresh() {
    if (!token) {
      $('status').textContent =
        'no token: open /#token=<admin token from <state-dir>/api.token>';
      return;
    }
    try {
      const [jobs, nodes, cost, series, tl, teams] = await Promise.all([
        api('/v1/jobs?limit=100'), api('/v1/nodes'), api('/v1/cost?by=job'),
        api('/v1/cost/series?buckets=120'), api('/v1/finops/timeline?limit=200'),
        api('/v1/cost?by=team'),
      ]);
      fill($('teams').tBodies[0], teams.groups.map(teamRow), 6, 'no costs yet');
      $('shared-note').textContent = 'Shared costs ' +
        usd(teams.total.shared_cost_micros) + ', split ' +
        (teams.shared_split === 'even' ? 'evenly between teams'
                                       : 'by GPU-hours') + '.';
      const byJob = {};
      for (const g of cost.groups) byJob[g.key] = g;
      fill($('jobs').tBodies[0], jobs.jobs.map((j) => jobRow(j, byJob[String(j.id)])),
           9, 'no jobs');
      const names = {};
      for (const j of jobs.jobs) names[j.id] = j.name;
      fill($('nodes').tBodies[0], nodes.nodes.map((n) => nodeRow(n, names)), 9,
           'no live nodes');
      const t = cost.total;
      $('t-cost').textContent = usd(t.cost_micros);
      $('t-list').textContent = usd(t.list_cost_micros);
      $('t-plan').textContent = t.planned_od_cost_micros != null ? usd(t.planned_od_cost_micros) : '–';
      const saved = t.savings_vs_plan_micros;
      $('t-saved').textContent = saved != null ? usd(saved) : '–';
      // a saving that is negative is shown as what it is: in red
      $('c-saved').className = 'card' + (saved != null && saved < 0 ? ' bad' : '');
      $('t-waste').textContent = usd(t.waste_cost_micros);
      // the headline: on-demand for the node-hours used
      const f = t.savings_vs_list_fraction;
      $('t-used').textContent = usd(t.savings_vs_list_micros) +
        (f != null ? ` (${(100 * f).toFixed(1)}%)` : '');
      $('c-used').className = 'card ' + (t.savings_vs_list_micros < 0 ? 'bad' : 'good');
      $('t-res').textContent = usd(t.savings_vs_reserved_micros);
      $('t-idle').textContent = usd(t.idle_cost_micros);
      // what counts as idle: the GPU's utilisation, else training progress
      $('t-idle-rule').textContent = cost.idle_rule || '';
      $('t-lost').textContent = usd(t.lost_work_cost_micros);
      // the cloud's bill, where one was applied (spotrun cost reconcile
      // --apply), with spotrun's estimate for the same job-days beside it
      $('t-billed').textContent = t.billed_micros != null
        ? `${usd(t.billed_micros)} (est. ${usd(t.billed_estimate_micros)})` : 'no bill applied';
      drawChart(series.points);
      drawTimeline(tl.events, names);
      $('status').textContent = 'updated ' + new Date().toISOString().slice(11, 19) + ' UTC';
      document.body.dataset.loaded = 'true';
    } catch (err) {
      $('status').textContent = String(err.message || err);
    }
  }

  refresh();
  setInterval(refresh, REFRESH_MS);
})();
