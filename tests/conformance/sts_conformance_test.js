// sts_conformance_test.js - spotrun's credential chain (lib/common/awscred*,
// through build/conformance/awscred_tool) against the official SDK
// (@aws-sdk/client-sts), both calling the same capture server on
// 127.0.0.1 for what a profile asks of STS:
//   - AssumeRole for role_arn + source_profile (with the source's keys,
//     with a session token, through a chain of two roles);
//   - AssumeRoleWithWebIdentity for AWS_WEB_IDENTITY_TOKEN_FILE;
// Required: the same Action, Version and parameters; signatures that
// verify with the SDK's signer (@smithy/signature-v4) for the source's
// secret (and fail under another); web identity unsigned by both; both
// read the same credentials and expiry from the answer; an STS error is
// read as the same code and message.
// Usage: node sts_conformance_test.js BUILD
'use strict';
const http = require('http');
const os = require('os');
const fs = require('fs');
const path = require('path');
const { execFile } = require('child_process');
const sts = require('@aws-sdk/client-sts');
const { verifyCaptured, assertLoopback, tally, formParams, diffParams } = require('./lib');

const BUILD = path.resolve(process.argv[2] || '../../build');
const TOOL = path.join(BUILD, 'conformance', 'awscred_tool');
const AKID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const REGION = 'us-west-2';
const EXPIRES = '2030-01-01T00:00:00Z';

const { check, done } = tally();

// Credentials the server hands out for a role: derived from its name, so
// a second call (a chain) can be verified with the first one's secret.
function roleCreds(arn) {
  const name = arn.split('/').pop();
  return {
    akid: `ASIA${name.toUpperCase().replace(/[^A-Z0-9]/g, '')}`,
    secret: `secret/${name}+Z`,
    token: `IQoJb3JpZ2luX2Vj${Buffer.from(name.repeat(200)).toString('base64')}==`,
  };
}

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

// ---- capture server ----------------------------------------------------
const captured = [];
let inject = null; // { code, message }: the next answer is this error
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    const u = new URL(req.url, 'http://x');
    captured.push({ method: req.method, path: u.pathname, query: u.search.slice(1), headers: req.headers, body });
    const p = formParams(body);
    let status = 200, xml;
    if (inject) {
      status = 403;
      xml = `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>` +
        `<Code>${esc(inject.code)}</Code><Message>${esc(inject.message)}</Message></Error>` +
        `<RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>`;
      inject = null;
    } else if (p.Action === 'AssumeRole' || p.Action === 'AssumeRoleWithWebIdentity') {
      const c = roleCreds(p.RoleArn);
      xml = `<${p.Action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><${p.Action}Result>` +
        (p.Action === 'AssumeRoleWithWebIdentity' ? '<SubjectFromWebIdentityToken>system:serviceaccount:ml:trainer</SubjectFromWebIdentityToken><Audience>sts.amazonaws.com</Audience>' : '') +
        `<AssumedRoleUser><AssumedRoleId>AROA3XFRBF535PLBIFPI4:${esc(p.RoleSessionName)}</AssumedRoleId>` +
        `<Arn>${esc(p.RoleArn)}/${esc(p.RoleSessionName)}</Arn></AssumedRoleUser>` +
        `<Credentials><AccessKeyId>${c.akid}</AccessKeyId><SecretAccessKey>${esc(c.secret)}</SecretAccessKey>` +
        `<SessionToken>${c.token}</SessionToken><Expiration>${EXPIRES}</Expiration></Credentials>` +
        `<PackedPolicySize>6</PackedPolicySize></${p.Action}Result>` +
        `<ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata></${p.Action}Response>`;
    } else {
      status = 400;
      xml = '<ErrorResponse><Error><Code>InvalidAction</Code><Message>no</Message></Error></ErrorResponse>';
    }
    res.writeHead(status, { 'Content-Type': 'text/xml' });
    res.end(xml);
  });
});

let url, home;

// Run the chain in a fresh HOME holding `files` (~/.aws/config, ...).
function runTool(files, extraEnv) {
  assertLoopback(url);
  fs.rmSync(path.join(home, '.aws'), { recursive: true, force: true });
  fs.mkdirSync(path.join(home, '.aws'), { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(home, '.aws', name), text, { mode: 0o600 });
  const env = {
    PATH: process.env.PATH, HOME: home, AWS_EC2_METADATA_DISABLED: 'true',
    AWS_ENDPOINT_URL_STS: url, AWS_REGION: REGION, SPOTRUN_LOG_LEVEL: 'error', ...extraEnv,
  };
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS']) if (process.env[k]) env[k] = process.env[k];
  return new Promise((resolve) => {
    execFile(TOOL, ['resolve'], { env, timeout: 30000 }, (err, stdout, stderr) => {
      let out;
      try { out = JSON.parse(stdout); } catch (e) { out = { error: `no JSON: ${stdout}${stderr}` }; }
      if (stderr && !/^\s*$/.test(stderr)) out.stderr = stderr;
      resolve(out);
    });
  });
}

function sdkClient(creds) {
  assertLoopback(url);
  return new sts.STSClient({ region: REGION, endpoint: url, maxAttempts: 1, credentials: creds });
}

// Send `cmds` with the SDK (each with its own credentials), run the tool
// on `files`; compare request by request.  secrets[i]: the secret that
// signed request i (null: unsigned).
async function compare(name, cmds, files, extraEnv, secrets) {
  captured.length = 0;
  const sdkOut = [];
  for (const [cmd, creds] of cmds) sdkOut.push(await sdkClient(creds).send(cmd));
  const sdkReqs = captured.splice(0);
  const tool = await runTool(files, extraEnv);
  const ourReqs = captured.splice(0);
  check(`${name}: spotrun resolved`, tool.ok !== undefined, JSON.stringify(tool));
  check(`${name}: nothing on stderr`, !tool.stderr, tool.stderr);
  check(`${name}: same number of STS requests`, sdkReqs.length === ourReqs.length, `sdk ${sdkReqs.length}, spotrun ${ourReqs.length}`);
  for (let i = 0; i < Math.min(sdkReqs.length, ourReqs.length); i++) {
    const d = diffParams(formParams(sdkReqs[i].body), formParams(ourReqs[i].body), 'sdk', 'spotrun');
    check(`${name}#${i + 1}: same Action, Version and parameters`, d.length === 0, d.join('\n  '));
    check(`${name}#${i + 1}: POST / with a form body`, ourReqs[i].method === 'POST' && ourReqs[i].path === '/' &&
      /^application\/x-www-form-urlencoded/.test(ourReqs[i].headers['content-type'] || ''));
    for (const [who, r] of [['sdk', sdkReqs[i]], ['spotrun', ourReqs[i]]]) {
      if (secrets[i] === null) {
        check(`${name}#${i + 1}: ${who} sends it unsigned`, !r.headers.authorization, r.headers.authorization);
        continue;
      }
      const why = await verifyCaptured(r, secrets[i]);
      check(`${name}#${i + 1}: ${who} signature verifies with the SDK signer`, why === null, why);
      check(`${name}#${i + 1}: ${who} signature fails under another secret`, (await verifyCaptured(r, secrets[i] + 'x')) !== null);
      check(`${name}#${i + 1}: ${who} signs for sts in ${REGION}`, /\/us-west-2\/sts\/aws4_request/.test(r.headers.authorization || ''));
    }
    check(`${name}#${i + 1}: same session token header`, sdkReqs[i].headers['x-amz-security-token'] === ourReqs[i].headers['x-amz-security-token']);
  }
  return { sdk: sdkOut, tool: tool.ok, err: tool.error };
}

function sameCreds(name, sdkAnswer, tool) {
  const c = sdkAnswer.Credentials;
  check(`${name}: both read the same credentials`, tool && c.AccessKeyId === tool.akid && c.SecretAccessKey === tool.secret &&
    c.SessionToken === tool.token, JSON.stringify({ sdk: c, tool }));
  check(`${name}: both read the same expiry`, tool && c.Expiration.getTime() / 1000 === tool.expires, `${c.Expiration} vs ${tool && tool.expires}`);
}

async function testAssumeRole() {
  const arn = 'arn:aws:iam::111122223333:role/ml-admin';
  const files = {
    credentials: `[base]\naws_access_key_id = ${AKID}\naws_secret_access_key = ${SECRET}\n`,
    config: `[profile ops]\nrole_arn = ${arn}\nsource_profile = base\nrole_session_name = spotrun-ops\n` +
      'external_id = ext-7 & co\nduration_seconds = 1800\n',
  };
  const cmd = new sts.AssumeRoleCommand({ RoleArn: arn, RoleSessionName: 'spotrun-ops', ExternalId: 'ext-7 & co', DurationSeconds: 1800 });
  const { sdk, tool } = await compare('AssumeRole (source_profile keys)', [[cmd, { accessKeyId: AKID, secretAccessKey: SECRET }]],
    files, { AWS_PROFILE: 'ops' }, [SECRET]);
  if (tool) {
    sameCreds('AssumeRole', sdk[0], tool);
    check('AssumeRole: kind', tool.kind === 'assume-role', tool.kind);
  }

  // the source holds a session: the token goes with the signed request
  const token = 'FwoGZXIvYXdzEXAMPLE//token+with/slash=';
  const files2 = {
    credentials: `[base]\naws_access_key_id = ASIASOURCE\naws_secret_access_key = ${SECRET}\naws_session_token = ${token}\n`,
    config: `[profile ops]\nrole_arn = ${arn}\nsource_profile = base\nrole_session_name = s2\n`,
  };
  await compare('AssumeRole (source with a session token)', [[new sts.AssumeRoleCommand({ RoleArn: arn, RoleSessionName: 's2' }),
    { accessKeyId: 'ASIASOURCE', secretAccessKey: SECRET, sessionToken: token }]], files2, { AWS_PROFILE: 'ops' }, [SECRET]);

  // a chain: b is assumed with c's keys, then a with b's credentials
  const arnA = 'arn:aws:iam::111122223333:role/role-a', arnB = 'arn:aws:iam::444455556666:role/role-b';
  const b = roleCreds(arnB);
  const files3 = {
    config: `[profile a]\nrole_arn = ${arnA}\nsource_profile = b\nrole_session_name = sa\n` +
      `[profile b]\nrole_arn = ${arnB}\nsource_profile = c\nrole_session_name = sb\n` +
      `[profile c]\naws_access_key_id = ${AKID}\naws_secret_access_key = ${SECRET}\n`,
  };
  const r3 = await compare('AssumeRole chain a <- b <- c', [
    [new sts.AssumeRoleCommand({ RoleArn: arnB, RoleSessionName: 'sb' }), { accessKeyId: AKID, secretAccessKey: SECRET }],
    [new sts.AssumeRoleCommand({ RoleArn: arnA, RoleSessionName: 'sa' }), { accessKeyId: b.akid, secretAccessKey: b.secret, sessionToken: b.token }],
  ], files3, { AWS_PROFILE: 'a' }, [SECRET, b.secret]);
  if (r3.tool) sameCreds('AssumeRole chain', r3.sdk[1], r3.tool);
}

async function testWebIdentity() {
  const arn = 'arn:aws:iam::111122223333:role/eks-trainer';
  const jwt = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6bWw6dHJhaW5lciJ9.c2lnbmF0dXJl';
  const tokFile = path.join(home, 'token');
  fs.writeFileSync(tokFile, jwt + '\n');
  const cmd = new sts.AssumeRoleWithWebIdentityCommand({ RoleArn: arn, RoleSessionName: 'trainer-0', WebIdentityToken: jwt });
  const { sdk, tool } = await compare('AssumeRoleWithWebIdentity (IRSA variables)', [[cmd, undefined]], {},
    { AWS_WEB_IDENTITY_TOKEN_FILE: tokFile, AWS_ROLE_ARN: arn, AWS_ROLE_SESSION_NAME: 'trainer-0' }, [null]);
  if (tool) {
    sameCreds('AssumeRoleWithWebIdentity', sdk[0], tool);
    check('AssumeRoleWithWebIdentity: kind', tool.kind === 'web-identity', tool.kind);
  }
}

async function testErrors() {
  const arn = 'arn:aws:iam::111122223333:role/nope';
  const msg = 'User: arn:aws:iam::1:user/x is not authorized to perform: sts:AssumeRole on resource: <role> & more';
  inject = { code: 'AccessDenied', message: msg };
  let sdkErr = null;
  try {
    await sdkClient({ accessKeyId: AKID, secretAccessKey: SECRET }).send(new sts.AssumeRoleCommand({ RoleArn: arn, RoleSessionName: 'x' }));
  } catch (e) { sdkErr = e; }
  check('AccessDenied: the SDK reads the error document', sdkErr && sdkErr.name === 'AccessDenied' && sdkErr.message === msg,
    sdkErr && `${sdkErr.name}: ${sdkErr.message}`);
  inject = { code: 'AccessDenied', message: msg };
  const out = await runTool({
    credentials: `[base]\naws_access_key_id = ${AKID}\naws_secret_access_key = ${SECRET}\n`,
    config: `[profile ops]\nrole_arn = ${arn}\nsource_profile = base\nrole_session_name = x\n`,
  }, { AWS_PROFILE: 'ops' });
  check('AccessDenied: spotrun reads the same code and message', out.error === `aws credentials: STS AssumeRole ${arn}: AccessDenied: ${msg}`, out.error);
  check('AccessDenied: an auth error (-EACCES)', out.code === -13, String(out.code));
  check('AccessDenied: no secret in the message', out.error && !out.error.includes(SECRET));
}

(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'sr-sts-'));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${server.address().port}`;
  await testAssumeRole();
  await testWebIdentity();
  await testErrors();
  server.close();
  fs.rmSync(home, { recursive: true, force: true });
  done('aws credential chain vs @aws-sdk/client-sts');
})().catch((e) => { console.error(e); process.exit(1); });
