// lib.js - shared helpers of the conformance suite (test-only).
'use strict';
const crypto = require('crypto');
const { SignatureV4 } = require('@smithy/signature-v4');

// A Sha256 constructor in the shape @smithy/signature-v4 expects
// (new Sha256(secret?); update(); digest() -> Promise<Uint8Array>).
class Sha256 {
  constructor(secret) {
    this.h = secret ? crypto.createHmac('sha256', Buffer.from(secret))
                    : crypto.createHash('sha256');
  }
  update(data) { this.h.update(typeof data === 'string' ? Buffer.from(data) : data); }
  digest() { return Promise.resolve(new Uint8Array(this.h.digest())); }
}

function signer({ akid, secret, token, region, service, s3Path, applyChecksum }) {
  return new SignatureV4({
    credentials: { accessKeyId: akid, secretAccessKey: secret, sessionToken: token || undefined },
    region, service, sha256: Sha256,
    uriEscapePath: !s3Path, applyChecksum: !!applyChecksum,
  });
}

// Parse a raw query string the way an HTTP server would (RFC 3986 percent
// decoding, '+' kept), into { key: value | [values] } for the signer.
function parseQuery(q) {
  const out = {};
  if (!q) return out;
  for (const part of q.split('&')) {
    if (part === '') continue;
    const i = part.indexOf('=');
    const k = decodeURIComponent(i < 0 ? part : part.slice(0, i));
    const v = i < 0 ? '' : decodeURIComponent(part.slice(i + 1));
    if (k in out) out[k] = [].concat(out[k], v); else out[k] = v;
  }
  return out;
}

function amzDateToDate(s) {
  const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(s);
  if (!m) throw new Error(`bad x-amz-date '${s}'`);
  return new Date(Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
}

// Check a captured request's signature with the SDK's own signer: rebuild
// the request with exactly the headers it says it signed, sign it again
// under `secret` at its own x-amz-date, and compare.  Returns null when it
// verifies, else a reason.
async function verifyCaptured(req, secret) {
  const h = req.headers;
  const auth = h['authorization'];
  if (!auth) return 'no Authorization header';
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return `malformed Authorization '${auth.replace(/Signature=.*/, 'Signature=...')}'`;
  const [, akid, , region, service, signed] = m;
  const names = signed.split(';');
  const headers = {};
  for (const n of names) {
    if (!(n in h)) return `signed header '${n}' was not sent`;
    if (n === 'x-amz-date' || n === 'x-amz-security-token') continue;
    headers[n] = h[n];
  }
  const s = signer({ akid, secret, token: h['x-amz-security-token'], region, service,
                     s3Path: service === 's3', applyChecksum: false });
  const out = await s.sign({
    method: req.method, protocol: 'http:', hostname: h.host, path: req.path,
    query: parseQuery(req.query), headers, body: req.body,
  }, { signingDate: amzDateToDate(h['x-amz-date']) });
  const want = out.headers['authorization'];
  if (want !== auth) return `signature differs from the SDK signer's:\n  sent ${auth}\n  sdk  ${want}`;
  return null;
}

// Refuse anything that is not loopback: these tests must never reach AWS.
function assertLoopback(url) {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!(host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)))
    throw new Error(`refusing non-loopback endpoint ${url}`);
}

// Pass/fail counting: t.check(name, cond, detail) prints a failure;
// t.done(what) prints "N passed, M failed" and exits.
function tally() {
  const t = { pass: 0, fail: 0 };
  t.check = (name, cond, detail) => {
    if (cond) { t.pass++; return; }
    t.fail++;
    console.log(`FAIL ${name}${detail ? `\n  ${detail}` : ''}`);
  };
  t.done = (what) => {
    console.log(`${what}: ${t.pass} passed, ${t.fail} failed`);
    process.exit(t.fail ? 1 : 0);
  };
  return t;
}

// Decode an application/x-www-form-urlencoded body strictly: RFC 3986
// percent-encoding; a '+' would mean a space in forms, and neither client
// should send one for a space.
function formParams(body) {
  const out = {};
  for (const part of body.split('&')) {
    if (!part) continue;
    const i = part.indexOf('=');
    const k = decodeURIComponent(i < 0 ? part : part.slice(0, i));
    out[k] = i < 0 ? '' : decodeURIComponent(part.slice(i + 1));
  }
  return out;
}

// The parameters that differ, "name: a=... b=..." (a, b: who sent them).
function diffParams(x, y, a = 'sdk', b = 'driver') {
  const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
  return keys.filter((k) => x[k] !== y[k]).map((k) => `${k}: ${a}=${JSON.stringify(x[k])} ${b}=${JSON.stringify(y[k])}`);
}

module.exports = { Sha256, signer, parseQuery, verifyCaptured, assertLoopback, amzDateToDate, tally, formParams, diffParams };
