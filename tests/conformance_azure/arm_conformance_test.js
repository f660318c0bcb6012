// arm_conformance_test.js - spotrun's Azure Resource Manager requests and
// its Entra token exchange checked against Microsoft's official JavaScript
// libraries (test-only): @azure/arm-compute 21.6.0 (the release whose
// virtualMachines operations use api-version 2024-03-01, the driver's
// ARM_API_COMPUTE) and @azure/identity (ClientSecretCredential,
// ClientCertificateCredential), both driving the tests' Azure emulator
// (`spotrun azure-emulator`, which the e2e tests run the driver against)
// through a recording proxy on 127.0.0.1, as does spotrun's driver
// (build/conformance/azure_tool).
//
// Two things are checked.  Requests: for every operation the driver uses -
// the client-credentials token (secret and certificate), virtualMachines
// createOrUpdate (spot, tags, customData, NIC/disk/IP with deleteOption)
// with its Azure-AsyncOperation polls and final GET, list (two pages by
// nextLink), delete - both send the same method, path, query and JSON
// body, compared structurally; the SDK is handed our body (its properties
// flattened into its model), so a field it does not know is dropped from
// its request and shows as a difference.  Answers: the emulator's, as the
// SDK reads them - its long-running-operation poller follows the
// emulator's Azure-AsyncOperation to Succeeded (create, delete) and to a
// capacity failure (AllocationFailed), its pager follows nextLink, its
// deserializer reads the VMs - so what the e2e tests prove against the
// emulator holds for what ARM sends.
//
// The SDK insists on https (the bearer policy, MSAL's authority): it is
// given https://management.conformance.test and https://login.
// conformance.test, and an HttpClient that sends each request to the
// proxy instead; the proxy writes the emulator's URLs in its answers as
// those hosts for the SDK and as its own address for the driver.
'use strict';
const http = require('http');
const path = require('path');
const fs = require('fs');
const os = require('os');
const crypto = require('crypto');
const { execFileSync, spawn } = require('child_process');
const { ComputeManagementClient } = require('@azure/arm-compute');
const { ClientSecretCredential, ClientCertificateCredential } = require('@azure/identity');
const { createDefaultHttpClient } = require('@azure/core-rest-pipeline');
const { sameJson, canonQuery, compare, jwtParts, runTool } = require('../conformance/reqdiff.js');

const BUILD = process.argv[2];
const ROOT = path.resolve(__dirname, '..', '..');
const TOOL = path.join(BUILD, 'conformance', 'azure_tool');
const SUB = 'conf-sub', RG = 'conf-rg', TENANT = 'conf-tenant', CLIENT = 'conf-client';
const SECRET = 'conf-s3cret&=+';
const ARM_HOST = 'https://management.conformance.test';
const LOGIN_HOST = 'https://login.conformance.test';
const SUBNET = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/virtualNetworks/v/subnets/default`;
const SIZE = 'Standard_NC6s_v3', FULL = 'Standard_ND96asr_v4';
const TOKEN = /^azemu-[0-9a-f]{32}$/; // the emulator's access tokens
let passed = 0, failed = 0;

function ok(name, why) {
  if (why) { failed++; console.log(`FAIL ${name}: ${why}`); } else { passed++; console.log(`ok   ${name}`); }
}

// ---- the emulator (`spotrun azure-emulator`, lib/azure/azemu.h) ----------
function startEmulator(work) {
  const p = spawn(path.join(BUILD, 'bin', 'spotrun'),
                  ['azure-emulator', '--work-dir', work, '--data', path.join(ROOT, 'data'), '--page', '1',
                   '--boot-s', '0.2', '--capacity', `${SIZE}=plenty`],
                  { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = new Promise((resolve, reject) => {
    let buf = '';
    p.stdout.on('data', d => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i >= 0) resolve(buf.slice(0, i));
    });
    p.on('exit', c => reject(new Error(`azure-emulator exited (${c})`)));
  });
  // a control: POST <url>/emu/<what>?<q>
  const control = async (what, q) => {
    const u = new URL(`${await url}/emu/${what}`);
    for (const [k, v] of Object.entries(q)) u.searchParams.set(k, v);
    return new Promise((resolve, reject) => {
      const rq = http.request(u, { method: 'POST' }, r => { r.resume(); r.on('end', resolve); });
      rq.on('error', reject);
      rq.end();
    });
  };
  return { proc: p, url, control };
}

// ---- the recording proxy ---------------------------------------------------
const seen = [];
function makeProxy(emuUrl) {
  const emu = new URL(emuUrl);
  let self;
  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', d => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const client = req.headers['x-conformance-client'] === 'sdk' ? 'sdk' : 'ours';
      const rec = { client, method: req.method, url: req.url, body, headers: req.headers };
      seen.push(rec); if (process.env.CONF_DEBUG) console.error(client, req.method, req.url);
      const u = new URL(req.url, 'http://x');
      // MSAL's authority metadata (the emulator is Entra's token endpoint only)
      if (/\/v2\.0\/\.well-known\/openid-configuration$/.test(u.pathname)) {
        const t = `${LOGIN_HOST}/${TENANT}`;
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ token_endpoint: `${t}/oauth2/v2.0/token`,
          authorization_endpoint: `${t}/oauth2/v2.0/authorize`, end_session_endpoint: `${t}/oauth2/v2.0/logout`,
          issuer: `${t}/v2.0`, jwks_uri: `${t}/discovery/v2.0/keys`, response_types_supported: ['code'] }));
      }
      const hdrs = { ...req.headers };
      delete hdrs['x-conformance-client'];
      hdrs.host = emu.host;
      hdrs['content-length'] = Buffer.byteLength(body);
      const up = http.request({ host: emu.hostname, port: emu.port, method: req.method, path: req.url,
                                headers: hdrs }, (r) => {
        const rc = [];
        r.on('data', d => rc.push(d));
        r.on('end', () => {
          const to = client === 'sdk' ? ARM_HOST : self;
          const fix = (s) => s.split(emuUrl).join(to);
          const out = fix(Buffer.concat(rc).toString());
          const h = {};
          for (const [k, v] of Object.entries(r.headers))
            if (k !== 'content-length' && k !== 'connection') h[k] = typeof v === 'string' ? fix(v) : v;
          h['content-length'] = Buffer.byteLength(out);
          rec.status = r.statusCode;
          res.writeHead(r.statusCode, h);
          res.end(out);
        });
      });
      up.on('error', (e) => { res.statusCode = 502; res.end(String(e)); });
      up.end(body);
    });
  });
  return new Promise(r => srv.listen(0, '127.0.0.1', () => {
    self = `http://127.0.0.1:${srv.address().port}`;
    r({ srv, url: self });
  }));
}

// The SDK's HttpClient: every request to the proxy, marked as the SDK's.
function sdkHttpClient(proxy) {
  const inner = createDefaultHttpClient();
  return { sendRequest: (req) => {
    req.url = req.url.replace(/^https:\/\/[^/]+/, proxy);
    req.headers.set('x-conformance-client', 'sdk');
    req.allowInsecureConnection = true; // to the loopback proxy only
    return inner.sendRequest(req);
  } };
}

function tool(opts, args, env) { return runTool(TOOL, [JSON.stringify(opts), ...args], env, 120000); }
const canon = (url) => canonQuery(url);

// ARM's JSON into the SDK's model: every "properties" object's members
// become its parent's (the SDK's x-ms-client-flatten), recursively.
function flatten(v) {
  if (Array.isArray(v)) return v.map(flatten);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === 'properties' && x && typeof x === 'object' && !Array.isArray(x))
        Object.assign(o, flatten(x));
      else
        o[k] = flatten(x);
    }
    return o;
  }
  return v;
}
// An operation poll with its operation's id as "OP" (each create has its own).
function opNamed(q) {
  return q && { ...q, url: q.url.replace(/\/operations\/[^/?]+/, '/operations/OP') };
}
function form(body) { return new URLSearchParams(body); }
// Does the assertion verify with the certificate under its header's alg?
function jwtVerifies(assertion, certPem) {
  const [h, c, sig] = assertion.split('.');
  const alg = JSON.parse(Buffer.from(h, 'base64url').toString()).alg;
  const key = { key: certPem };
  if (alg === 'PS256') Object.assign(key, { padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
  else if (alg !== 'RS256') return false;
  return crypto.verify('sha256', Buffer.from(`${h}.${c}`), key, Buffer.from(sig, 'base64url'));
}
const OAUTH = ['grant_type', 'client_id', 'scope', 'client_secret', 'client_assertion_type', 'client_assertion'];
// Our token request vs the SDK's: the same URL path; every field we send,
// the SDK sends; the OAuth fields equal (the assertion's aside).
function compareToken(ours, sdk) {
  if (!ours || !sdk) return `missing token request (ours ${!!ours}, sdk ${!!sdk})`;
  if (ours.method !== 'POST' || sdk.method !== 'POST') return `method ${ours.method} vs ${sdk.method}`;
  if (canon(ours.url).path !== canon(sdk.url).path) return `path ${ours.url} vs ${sdk.url}`;
  if (!/^application\/x-www-form-urlencoded/.test(ours.headers['content-type'] || ''))
    return `content-type ${ours.headers['content-type']}`;
  const fo = form(ours.body), fsdk = form(sdk.body);
  for (const k of fo.keys())
    if (!fsdk.has(k)) return `we send ${k}, the SDK does not`;
  for (const k of OAUTH) {
    if (fo.has(k) !== fsdk.has(k)) return `${k}: ours ${fo.has(k)}, sdk ${fsdk.has(k)}`;
    if (k !== 'client_assertion' && fo.get(k) !== fsdk.get(k)) return `${k}: '${fo.get(k)}' vs '${fsdk.get(k)}'`;
  }
  return null;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armconf-'));
  fs.mkdirSync(path.join(dir, 'work'));
  const emu = startEmulator(path.join(dir, 'work'));
  const emuUrl = await emu.url;
  const px = await makeProxy(emuUrl);
  const opts = { endpoint: px.url, resource_group: RG, location: 'eastus', subnet: SUBNET,
                 ssh_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIConformance conf', public_ip: true };
  const env = { PATH: process.env.PATH, HOME: dir, AZURE_AUTHORITY_HOST: px.url, AZURE_TENANT_ID: TENANT,
                AZURE_CLIENT_ID: CLIENT, AZURE_CLIENT_SECRET: SECRET, AZURE_SUBSCRIPTION_ID: SUB,
                SPOTRUN_LOG_LEVEL: 'off' };
  const hc = sdkHttpClient(px.url);
  const cred = new ClientSecretCredential(TENANT, CLIENT, SECRET,
    { authorityHost: LOGIN_HOST, httpClient: hc, disableInstanceDiscovery: true });
  const cm = new ComputeManagementClient(cred, SUB, { endpoint: ARM_HOST, httpClient: hc,
    credentialScopes: ['https://management.azure.com/.default'] }); // ARM's, not the stand-in host's
  const mark = () => seen.length;
  const since = (i, who, f) => seen.slice(i).filter(q => q.client === who && f(q));
  const isToken = q => /\/oauth2\/v2\.0\/token$/.test(canon(q.url).path);
  try {
    // 1. client credentials (secret)
    let i = mark();
    const t = await tool(opts, ['token'], env);
    const tk = await cred.getToken('https://management.azure.com/.default');
    ok('token: client secret (form fields, path)',
       (t.ok ? null : `tool: ${t.error}`) || (tk && TOKEN.test(tk.token) && TOKEN.test(t.ok) ? null :
        `not the emulator's tokens: ${tk && tk.token}, ${t.ok}`) ||
       compareToken(since(i, 'ours', isToken)[0], since(i, 'sdk', isToken)[0]));

    // 2. client credentials (certificate: a client_assertion JWT)
    const pem = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=conformance',
      '-days', '1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'crt.pem')], { stdio: 'ignore' });
    fs.writeFileSync(pem, fs.readFileSync(path.join(dir, 'key.pem')) + fs.readFileSync(path.join(dir, 'crt.pem')),
                     { mode: 0o600 });
    i = mark();
    const envc = { ...env, AZURE_CLIENT_CERTIFICATE_PATH: pem };
    delete envc.AZURE_CLIENT_SECRET;
    const tc = await tool(opts, ['token'], envc);
    const ccred = new ClientCertificateCredential(TENANT, CLIENT, pem,
      { authorityHost: LOGIN_HOST, httpClient: hc, disableInstanceDiscovery: true });
    await ccred.getToken('https://management.azure.com/.default');
    const oc = since(i, 'ours', isToken)[0], sc = since(i, 'sdk', isToken)[0];
    let why = (tc.ok ? null : `tool: ${tc.error}`) || compareToken(oc, sc);
    if (!why) {
      const a = jwtParts(form(oc.body).get('client_assertion')), b = jwtParts(form(sc.body).get('client_assertion'));
      const claims = o => Object.keys(o).filter(k => o[k] !== undefined).sort();
      why = sameJson(claims(a.c), claims(b.c), 'claims') ||
            // each its token endpoint (hosts differ: the proxy, the stand-in)
            (a.c.aud !== `${px.url}${canon(oc.url).path}` || canon(a.c.aud).path !== canon(b.c.aud).path ?
              `aud ${a.c.aud} vs ${b.c.aud}` : null) ||
            (a.c.iss !== b.c.iss || a.c.sub !== b.c.sub ? 'iss/sub differ' : null) ||
            sameJson(a.h, b.h, 'header (alg, thumbprint)') ||
            (!jwtVerifies(form(oc.body).get('client_assertion'), fs.readFileSync(path.join(dir, 'crt.pem'))) ?
              'our assertion does not verify with the certificate' : null);
    }
    ok('token: client certificate (form fields, assertion header, claims, signature)', why);

    // 3. createOrUpdate: ours, then the SDK's with our body (after an SDK
    // delete of ours, so both go through the whole operation)
    const launch = { key: 'sr-conf-42-2', size: SIZE, spot: true, zone: 'eastus-2',
      image: 'Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest', cluster: 'conf', job: 7, node: 42,
      attempt: 2, script: '#!/bin/sh\necho hi\n' };
    i = mark();
    const c = await tool(opts, ['create', JSON.stringify(launch)], env);
    const oursPut = since(i, 'ours', q => q.method === 'PUT')[0];
    const oursOps = since(i, 'ours', q => /\/operations\//.test(q.url));
    const oursGet = since(i, 'ours', q => q.method === 'GET' && /virtualMachines\//.test(q.url));
    if (!c.ok) { ok('virtualMachines.createOrUpdate', `tool: ${c.error}`); throw new Error('no create'); }
    const name = canon(oursPut.url).path.split('/').pop();
    i = mark();
    await cm.virtualMachines.beginDeleteAndWait(RG, name);
    const sdkDel = since(i, 'sdk', q => q.method === 'DELETE')[0];
    const sdkDelOps = since(i, 'sdk', q => /\/operations\//.test(q.url));
    ok('virtualMachines.delete: the SDK follows the emulator\'s operation to its end',
       sdkDelOps.length ? null : 'the SDK polled no operation');
    i = mark();
    const vm = await cm.virtualMachines.beginCreateOrUpdateAndWait(RG, name, flatten(JSON.parse(oursPut.body)),
                                                                 { updateIntervalInMs: 200 });
    const sdkPut = since(i, 'sdk', q => q.method === 'PUT')[0];
    const sdkOps = since(i, 'sdk', q => /\/operations\//.test(q.url));
    ok('virtualMachines.createOrUpdate (spot, tags, customData, NIC/disk/IP deleteOption)', compare(oursPut, sdkPut));
    ok('create: the operation polled alike (Azure-AsyncOperation, then GET vm)',
       (!oursOps.length || !sdkOps.length ? `operation polls: ours ${oursOps.length}, sdk ${sdkOps.length}` : null) ||
       compare(opNamed(oursOps[0]), opNamed(sdkOps[0])) ||
       compare(oursGet[oursGet.length - 1], since(i, 'sdk', q => q.method === 'GET' && /virtualMachines\//.test(q.url)).pop()));
    ok('create: the SDK reads the emulator\'s VM as ours does',
       (vm.provisioningState !== 'Succeeded' ? `provisioningState ${vm.provisioningState}` : null) ||
       (vm.name !== c.ok.id ? `name ${vm.name} vs ${c.ok.id}` : null) ||
       (vm.priority !== 'Spot' || !c.ok.spot ? `priority ${vm.priority}, ours spot ${c.ok.spot}` : null) ||
       (vm.hardwareProfile.vmSize !== c.ok.type ? `size ${vm.hardwareProfile.vmSize} vs ${c.ok.type}` : null) ||
       (`eastus-${(vm.zones || [])[0]}` !== c.ok.zone ? `zone ${vm.zones} vs ${c.ok.zone}` : null) ||
       (vm.tags['spotrun:cluster'] !== 'conf' ? `tags ${JSON.stringify(vm.tags)}` : null));

    // 4. a capacity failure, from the operation
    await emu.control('capacity', { size: FULL, spot: 'none' });
    i = mark();
    const f = await tool(opts, ['create', JSON.stringify({ ...launch, key: 'sr-conf-43-1', size: FULL })], env);
    const fput = since(i, 'ours', q => q.method === 'PUT')[0];
    // the driver deletes the Failed VM (its NIC, disk, IP with it) at once
    const fdel = since(i, 'ours', q => q.method === 'DELETE' && q.url.split('?')[0] === fput.url.split('?')[0]);
    let sdkErr = null;
    try {
      await cm.virtualMachines.beginCreateOrUpdateAndWait(RG, canon(fput.url).path.split('/').pop(),
        flatten(JSON.parse(fput.body)), { updateIntervalInMs: 200 });
    } catch (e) { sdkErr = e; }
    ok('create: AllocationFailed from the operation is capacity to both; the driver deletes the Failed VM',
       (f.ok || f.class !== 1 ? `ours: ${JSON.stringify(f)} (class 1 = capacity expected)` : null) ||
       (fdel.length !== 1 ? `${fdel.length} DELETEs of the Failed VM, not 1` : null) ||
       (!sdkErr || !/AllocationFailed/.test(`${sdkErr.code} ${sdkErr.message}`) ?
         `sdk: ${sdkErr && (sdkErr.code || sdkErr.message)}` : null));

    // 5. list: two pages (the emulator's page is one VM) by nextLink
    const c2 = await tool(opts, ['create', JSON.stringify({ ...launch, key: 'sr-conf-44-1', node: 44 })], env);
    i = mark();
    const l = await tool(opts, ['list', 'conf'], env);
    const oursL = since(i, 'ours', q => q.method === 'GET' && /virtualMachines(\?|$)/.test(q.url));
    i = mark();
    const sdkVms = [];
    for await (const v of cm.virtualMachines.list(RG)) sdkVms.push(v);
    const sdkL = since(i, 'sdk', q => q.method === 'GET' && /virtualMachines(\?|$)/.test(q.url));
    const names = sdkVms.filter(v => v.tags && v.tags['spotrun:cluster'] === 'conf').map(v => v.name).sort();
    ok('virtualMachines.list (nextLink pages; the same VMs read)',
       (!l.ok ? `tool: ${l.error}` : null) || (!c2.ok ? `tool create: ${c2.error}` : null) ||
       (oursL.length < 2 || sdkL.length !== oursL.length ? `pages: ours ${oursL.length}, sdk ${sdkL.length}` : null) ||
       oursL.map((q, k) => compare(q, sdkL[k])).find(x => x) ||
       sameJson([...l.ok].sort(), names, 'vms'));

    // 6. delete (ours, then the SDK's request for the same VM)
    i = mark();
    const d = await tool(opts, ['delete', c2.ok.id], env);
    const oursD = since(i, 'ours', q => q.method === 'DELETE')[0];
    i = mark();
    await cm.virtualMachines.beginDeleteAndWait(RG, c2.ok.id);
    ok('virtualMachines.delete', (!('ok' in d) ? `tool: ${d.error}` : null) ||
       compare(oursD, since(i, 'sdk', q => q.method === 'DELETE')[0]) ||
       compare(oursD, sdkDel && { ...sdkDel, url: sdkDel.url.replace(name, c2.ok.id) }));
    const bad = seen.filter(q => q.client === 'ours' && /\/subscriptions\//.test(q.url) &&
                            (!/^Bearer azemu-/.test(q.headers.authorization) || q.status === 401));
    ok('Authorization: Bearer on every ARM request', bad.length ? `${bad.length} without` : null);
  } catch (e) {
    ok('suite', e.stack);
  }
  const exited = new Promise(r => { emu.proc.on('exit', r); setTimeout(r, 10000); });
  emu.proc.kill('SIGTERM');
  await exited;
  px.srv.close();
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
main();
