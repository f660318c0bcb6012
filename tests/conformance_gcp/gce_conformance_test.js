// gce_conformance_test.js - spotrun's Compute Engine requests and its
// service-account token exchange checked against Google's official Node.js
// libraries (test-only): @google-cloud/compute over its REST transport and
// google-auth-library's JWT client, both pointed at a capture server on
// 127.0.0.1, as is spotrun's driver (build/conformance/gcp_tool).  For
// every operation the driver uses - instances.insert (spot, with an
// accelerator, labels and a startup-script), zoneOperations.wait,
// instances.get, instances.aggregatedList (two pages), instances.delete,
// regions.get - both must send the same method, path, query (the SDK's
// $alt aside) and JSON body, compared structurally.  The SDK is handed the
// body our driver sent, so a field name or type it does not know would be
// dropped from its own and show as a difference (empty maps, which the
// SDK writes for every proto map field, count as absent).  The token exchange: the
// same form fields, the same JWT claim names and alg.
'use strict';
const http = require('http');
const path = require('path');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const compute = require('@google-cloud/compute');
const { JWT } = require('google-auth-library');
const rd = require('../conformance/reqdiff.js');
const { sameJson, jwtParts, runTool } = rd;

const BUILD = process.argv[2];
const TOOL = path.join(BUILD, 'conformance', 'gcp_tool');
const PROJECT = 'conf-project';
let passed = 0, failed = 0;

function ok(name, why) {
  if (why) { failed++; console.log(`FAIL ${name}: ${why}`); } else { passed++; console.log(`ok   ${name}`); }
}

// The capture server: every request recorded, canned answers.
const seen = [];
let pages = 0;
function answer(req, body) {
  const u = new URL(req.url, 'http://x');
  const p = u.pathname;
  if (p === '/token')
    return { access_token: 'ya29.conformance', expires_in: 3600, token_type: 'Bearer' };
  if (/\/operations\/[^/]+\/wait$/.test(p) || (req.method === 'DELETE'))
    return { name: 'operation-1', status: 'DONE', zone: `projects/${PROJECT}/zones/us-central1-a` };
  if (req.method === 'POST' && /\/instances$/.test(p))
    return { name: 'operation-1', status: 'RUNNING', zone: `projects/${PROJECT}/zones/us-central1-a` };
  if (/\/aggregated\/instances$/.test(p)) {
    pages++;
    const inst = { name: `sr-c-${pages}-1`, zone: `projects/${PROJECT}/zones/us-central1-a`, status: 'RUNNING',
                   labels: { 'spotrun-cluster': 'c' }, machineType: 'zones/us-central1-a/machineTypes/a2-highgpu-1g' };
    const doc = { items: { 'zones/us-central1-a': { instances: [inst] } } };
    if (!u.searchParams.get('pageToken')) doc.nextPageToken = 'page2';
    return doc;
  }
  if (/\/regions\/[^/]+$/.test(p))
    return { name: 'us-central1', zones: [`projects/${PROJECT}/zones/us-central1-a`] };
  if (/\/instances\/[^/]+$/.test(p))
    return { name: p.split('/').pop(), zone: `projects/${PROJECT}/zones/us-central1-a`, status: 'RUNNING',
             machineType: 'zones/us-central1-a/machineTypes/a2-highgpu-1g', labels: {} };
  return { error: { code: 404, message: 'no route' } };
}
const srv = http.createServer((req, res) => {
  let b = '';
  req.on('data', d => { b += d; });
  req.on('end', () => {
    seen.push({ method: req.method, url: req.url, body: b, headers: req.headers });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(answer(req, b)));
  });
});

function tool(args, env) { return runTool(TOOL, args, env, 30000); }
const canonQuery = (url) => rd.canonQuery(url, ['$alt']);

// An empty map (a proto map field the SDK always writes) is no field.
function dropEmpty(v) {
  if (Array.isArray(v)) return v.map(dropEmpty);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) {
      const y = dropEmpty(x);
      if (y && typeof y === 'object' && !Array.isArray(y) && Object.keys(y).length === 0) continue;
      o[k] = y;
    }
    return o;
  }
  return v;
}

// Our request vs the SDK's: method, path, query (the SDK's $alt aside),
// body (empty maps dropped; a wait's empty body either way).
const compare = (ours, sdk) => rd.compare(ours, sdk, { ignore: ['$alt'], norm: dropEmpty,
  noBody: (p, m) => m === 'POST' && /\/wait$/.test(p) });

srv.listen(0, '127.0.0.1', async () => {
  const port = srv.address().port;
  const base = `http://127.0.0.1:${port}`;
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const email = 'conf@conf-project.iam.gserviceaccount.com';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gceconf-'));
  const keyFile = path.join(dir, 'sa.json');
  fs.writeFileSync(keyFile, JSON.stringify({ type: 'service_account', project_id: PROJECT, private_key_id: 'k1',
    private_key: privateKey, client_email: email, token_uri: `${base}/token` }), { mode: 0o600 });
  const env = { PATH: process.env.PATH, HOME: dir, GOOGLE_APPLICATION_CREDENTIALS: keyFile,
                CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE: `${base}/compute/v1`, SPOTRUN_LOG_LEVEL: 'off' };
  // The SDK: its token request is sent to the capture server instead of
  // oauth2.googleapis.com (its URL is fixed; nothing else changes).
  const jwt = new JWT({ email, key: privateKey, keyId: 'k1', scopes: ['https://www.googleapis.com/auth/cloud-platform'] });
  jwt.transporter.interceptors.request.add({ resolved: async (o) => {
    if (String(o.url).startsWith('https://oauth2.googleapis.com/token')) o.url = `${base}/token`;
    return o;
  } });
  const opts = { fallback: true, apiEndpoint: '127.0.0.1', port, protocol: 'http', authClient: jwt };
  const inst = new compute.InstancesClient(opts);
  const zops = new compute.ZoneOperationsClient(opts);
  const regions = new compute.RegionsClient(opts);
  const mark = () => seen.length;
  const since = (i, f) => seen.slice(i).filter(f);
  try {
    // 1. the token exchange
    let i = mark();
    const r = await tool(['token'], env);
    const ours = since(i, q => q.url === '/token')[0];
    i = mark();
    await jwt.getAccessToken();
    const sdk = since(i, q => q.url === '/token')[0];
    let why = r.ok ? null : `tool: ${r.error}`;
    if (!why) {
      const fo = new URLSearchParams(ours.body), fs2 = new URLSearchParams(sdk.body);
      why = sameJson([...fo.keys()].sort(), [...fs2.keys()].sort(), 'form keys') ||
            (fo.get('grant_type') !== fs2.get('grant_type') ? 'grant_type differs' : null);
      if (!why) {
        const a = jwtParts(fo.get('assertion')), b = jwtParts(fs2.get('assertion'));
        why = sameJson(Object.keys(a.c).sort(), Object.keys(b.c).filter(k => b.c[k] !== undefined).sort(), 'claims') ||
              (a.h.alg !== b.h.alg ? `alg ${a.h.alg} vs ${b.h.alg}` : null) ||
              (a.c.scope !== b.c.scope ? 'scope differs' : null) ||
              (a.c.iss !== b.c.iss ? 'iss differs' : null) ||
              (a.c.exp - a.c.iat !== b.c.exp - b.c.iat ? 'lifetime differs' : null) ||
              (a.c.aud !== `${base}/token` ? `aud ${a.c.aud}: not its token_uri` : null);
      }
    }
    ok('token exchange (jwt-bearer grant, RS256 assertion)', why);

    // 2. instances.insert + zoneOperations.wait + instances.get
    i = mark();
    const ins = await tool(['insert', JSON.stringify({ zone: 'us-central1-a', type: 'n1-standard-8', spot: true,
      image: 'projects/debian-cloud/global/images/family/debian-12', accel: 'nvidia-tesla-v100', accel_count: 1,
      cluster: 'Conf_Cluster', job: 7, node: 42, attempt: 2, script: '#!/bin/sh\necho hi\n', key: 'sr-conf-42-2' })], env);
    const oursIns = since(i, q => q.method === 'POST' && /\/instances\?/.test(q.url))[0];
    const oursWait = since(i, q => /\/wait/.test(q.url))[0];
    const oursGet = since(i, q => q.method === 'GET' && /\/instances\//.test(q.url))[0];
    if (!ins.ok) { ok('instances.insert', `tool: ${ins.error}`); throw new Error('no insert'); }
    const u = canonQuery(oursIns.url);
    i = mark();
    await inst.insert({ project: PROJECT, zone: 'us-central1-a', requestId: u.q.requestId,
                        instanceResource: JSON.parse(oursIns.body) });
    ok('instances.insert (spot, accelerator, labels, startup-script, requestId)',
       compare(oursIns, since(i, q => q.method === 'POST' && /\/instances/.test(q.url))[0]) ||
       (/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(u.q.requestId) ? null
         : `requestId '${u.q.requestId}' is not a UUID`));
    i = mark();
    await zops.wait({ project: PROJECT, zone: 'us-central1-a', operation: 'operation-1' });
    ok('zoneOperations.wait', compare(oursWait, since(i, q => /\/wait/.test(q.url))[0]));
    i = mark();
    const name = JSON.parse(oursIns.body).name;
    await inst.get({ project: PROJECT, zone: 'us-central1-a', instance: name });
    ok('instances.get', compare(oursGet, since(i, q => q.method === 'GET')[0]));

    // 3. aggregatedList by label, two pages
    i = mark();
    pages = 0;
    const l = await tool(['list', 'Conf_Cluster'], env);
    const oursL = since(i, q => /aggregated/.test(q.url));
    i = mark();
    pages = 0;
    const it = inst.aggregatedListAsync({ project: PROJECT, filter: canonQuery(oursL[0].url).q.filter,
                                          maxResults: 500 });
    for await (const _ of it) { void _; }
    const sdkL = since(i, q => /aggregated/.test(q.url));
    ok('instances.aggregatedList (label filter, pages)',
       (!l.ok ? `tool: ${l.error}` : null) || (oursL.length !== 2 ? `${oursL.length} pages, not 2` : null) ||
       compare(oursL[0], sdkL[0]) || compare(oursL[1], sdkL[1]) ||
       (canonQuery(oursL[0].url).q.filter !== 'labels.spotrun-cluster="conf_cluster"' ?
         `filter ${canonQuery(oursL[0].url).q.filter}` : null));

    // 4. instances.delete
    i = mark();
    const d = await tool(['delete', `us-central1-a/${name}`], env);
    const oursD = since(i, q => q.method === 'DELETE')[0];
    i = mark();
    await inst.delete({ project: PROJECT, zone: 'us-central1-a', instance: name,
                        requestId: canonQuery(oursD.url).q.requestId });
    ok('instances.delete', (!('ok' in d) ? `tool: ${d.error}` : null) ||
       compare(oursD, since(i, q => q.method === 'DELETE')[0]));

    // 5. regions.get (spotrun check)
    i = mark();
    const z = await tool(['zones', 'us-central1'], env);
    const oursR = since(i, q => /\/regions\//.test(q.url))[0];
    i = mark();
    await regions.get({ project: PROJECT, region: 'us-central1' });
    ok('regions.get', (!z.ok ? `tool: ${z.error}` : null) ||
       compare(oursR, since(i, q => /\/regions\//.test(q.url))[0]));
    // every Compute request carried the bearer token
    const bad = seen.filter(q => q.url.startsWith('/compute/') &&
                            q.headers.authorization !== 'Bearer ya29.conformance');
    ok('Authorization: Bearer on every Compute request', bad.length ? `${bad.length} without` : null);
  } catch (e) {
    ok('suite', e.stack);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  srv.close();
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
});
