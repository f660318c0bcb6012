// reqdiff.js - what the SDK conformance suites (tests/conformance_gcp,
// tests/conformance_azure) share, test-only and free of npm packages:
// comparing a request of ours with the SDK's, structurally, and running
// a suite's C helper (build/conformance/*_tool, which prints one JSON
// document).
'use strict';
const { execFile } = require('child_process');

// a and b as JSON values: null when equal, else where they differ.
function sameJson(a, b, where = '') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b))
    return `${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (a && typeof a === 'object') {
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    if (JSON.stringify(ka) !== JSON.stringify(kb))
      return `${where}: keys ${JSON.stringify(ka)} vs ${JSON.stringify(kb)}`;
    for (const k of ka) { const d = sameJson(a[k], b[k], `${where}.${k}`); if (d) return d; }
    return null;
  }
  return a === b ? null : `${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}

// A request URL as { path, q: {name: value} }, the names in ignore left out.
function canonQuery(url, ignore = []) {
  const u = new URL(url, 'http://x');
  const q = {};
  for (const [k, v] of u.searchParams) if (!ignore.includes(k)) q[k] = v;
  return { path: u.pathname, q };
}

// Our request vs the SDK's ({method, url, body}): method, path, query
// (opts.ignore: names left out) and JSON body (opts.norm(body) first;
// opts.noBody(path, method): a body not compared).  null when the same.
function compare(ours, sdk, opts = {}) {
  if (!ours || !sdk) return `missing request (ours ${!!ours}, sdk ${!!sdk})`;
  if (ours.method !== sdk.method) return `method ${ours.method} vs ${sdk.method}`;
  const a = canonQuery(ours.url, opts.ignore), b = canonQuery(sdk.url, opts.ignore);
  if (a.path !== b.path) return `path ${a.path} vs ${b.path}`;
  const dq = sameJson(a.q, b.q, 'query');
  if (dq) return dq;
  if (!ours.body && !sdk.body) return null;
  if (opts.noBody && opts.noBody(a.path, ours.method)) return null;
  let x, y;
  try { x = JSON.parse(ours.body || 'null'); y = JSON.parse(sdk.body || 'null'); } catch (e) { return `body not JSON: ${e}`; }
  const norm = opts.norm || (v => v);
  return sameJson(norm(x), norm(y), 'body');
}

// A JWT's header and claims.
function jwtParts(assertion) {
  const [h, c] = assertion.split('.').slice(0, 2).map(s => JSON.parse(Buffer.from(s, 'base64url').toString()));
  return { h, c };
}

// Run a C helper: its JSON answer, or {error} with what it printed.
function runTool(file, args, env, timeoutMs) {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: timeoutMs }, (err, stdout, stderr) => {
      let doc = null;
      try { doc = JSON.parse(stdout); } catch (e) { doc = { error: `${stdout} ${stderr} ${err || ''}` }; }
      resolve(doc);
    });
  });
}

module.exports = { sameJson, canonQuery, compare, jwtParts, runTool };
