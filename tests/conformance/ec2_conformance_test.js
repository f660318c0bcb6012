// ec2_conformance_test.js - for every EC2 operation the driver uses, the
// official SDK (@aws-sdk/client-ec2) and spotrun's driver (through
// build/conformance/ec2_tool) call the same capture server on 127.0.0.1.
// Required:
//   - both send the same Action, Version and parameters (names, values,
//     list indexing);
//   - both signatures verify under the same secret with the canonical
//     request computed by the SDK's own signer (@smithy/signature-v4);
//   - both read the same answer the same way (ids, zones, tags, prices);
//   - each EC2 error code is classified as compute.h says, and the SDK
//     reads our error document as that code.
// Usage: node ec2_conformance_test.js BUILD
'use strict';
const http = require('http');
const os = require('os');
const fs = require('fs');
const path = require('path');
const { execFile } = require('child_process');
const ec2sdk = require('@aws-sdk/client-ec2');
const { verifyCaptured, assertLoopback, tally, formParams, diffParams } = require('./lib');
const { ANSWERS, errorXml, ERROR_STATUS } = require('./ec2_fixtures');

const BUILD = path.resolve(process.argv[2] || '../../build');
const TOOL = path.join(BUILD, 'conformance', 'ec2_tool');
const AKID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const TOKEN = 'IQoJb3JpZ2luX2VjEXAMPLE//TOKEN+with/slash=';
const REGION = 'us-east-1';

const { check, done } = tally();

// ---- capture server ----------------------------------------------------
const captured = [];
let inject = null; // { code, message } answers the next request with an error
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    const u = new URL(req.url, 'http://x');
    const rec = { method: req.method, path: u.pathname, query: u.search.slice(1), headers: req.headers, body };
    captured.push(rec);
    const params = formParams(body);
    let status = 200, xml;
    if (inject) {
      status = ERROR_STATUS[inject.code] || 400;
      xml = errorXml(inject.code, inject.message);
      inject = null;
    } else if (ANSWERS[params.Action]) {
      xml = ANSWERS[params.Action](params);
    } else {
      status = 400;
      xml = errorXml('InvalidAction', `The action ${params.Action} is not valid for this web service.`);
    }
    res.writeHead(status, { 'Content-Type': 'text/xml;charset=UTF-8' });
    res.end(xml);
  });
});

let url, home;
function sdkClient(token) {
  assertLoopback(url);
  return new ec2sdk.EC2Client({
    region: REGION, endpoint: url, maxAttempts: 1,
    credentials: { accessKeyId: AKID, secretAccessKey: SECRET, sessionToken: token || undefined },
  });
}

function runTool(args, token) {
  assertLoopback(url);
  const env = {
    PATH: process.env.PATH, HOME: home, AWS_EC2_METADATA_DISABLED: 'true',
    AWS_ACCESS_KEY_ID: AKID, AWS_SECRET_ACCESS_KEY: SECRET, AWS_REGION: REGION,
    AWS_ENDPOINT_URL_EC2: url, SPOTRUN_LOG_LEVEL: 'error',
  };
  if (token) env.AWS_SESSION_TOKEN = token;
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS']) if (process.env[k]) env[k] = process.env[k];
  return new Promise((resolve) => {
    execFile(TOOL, args, { env, timeout: 30000 }, (err, stdout, stderr) => {
      let out = null;
      try { out = JSON.parse(stdout); } catch (e) { out = { error: `no JSON: ${stdout}${stderr}` }; }
      if (stderr && !/^\s*$/.test(stderr)) out.stderr = stderr;
      resolve(out);
    });
  });
}

// Send `cmds` with the SDK and run the tool; compare request by request.
async function compare(name, sdkCalls, toolArgs, token) {
  const sdk = sdkClient(token);
  captured.length = 0;
  const sdkOut = [];
  for (const c of sdkCalls) sdkOut.push(await sdk.send(c));
  const sdkReqs = captured.splice(0);
  const tool = await runTool(toolArgs, token);
  const ourReqs = captured.splice(0);
  check(`${name}: driver succeeded`, tool.ok !== undefined, JSON.stringify(tool));
  check(`${name}: driver wrote nothing to stderr (no log line, no sanitizer report)`, !tool.stderr, tool.stderr);
  check(`${name}: same number of requests`, sdkReqs.length === ourReqs.length, `sdk ${sdkReqs.length}, driver ${ourReqs.length}`);
  for (let i = 0; i < Math.min(sdkReqs.length, ourReqs.length); i++) {
    const a = formParams(sdkReqs[i].body), b = formParams(ourReqs[i].body);
    const d = diffParams(a, b);
    check(`${name}#${i + 1}: same Action, Version and parameters`, d.length === 0, d.join('\n  '));
    check(`${name}#${i + 1}: POST / with a form body`, ourReqs[i].method === 'POST' && ourReqs[i].path === '/' &&
      /^application\/x-www-form-urlencoded/.test(ourReqs[i].headers['content-type'] || ''));
    for (const [who, r] of [['sdk', sdkReqs[i]], ['driver', ourReqs[i]]]) {
      const why = await verifyCaptured(r, SECRET);
      check(`${name}#${i + 1}: ${who} signature verifies with the SDK signer`, why === null, why);
      const wrong = await verifyCaptured(r, SECRET + 'x');
      check(`${name}#${i + 1}: ${who} signature fails under another secret`, wrong !== null);
    }
    if (token) check(`${name}#${i + 1}: session token sent`, ourReqs[i].headers['x-amz-security-token'] === token);
  }
  return { sdk: sdkOut, tool: tool.ok };
}

const tagList = (c) => [
  { Key: 'spotrun:cluster', Value: c.cluster }, { Key: 'spotrun:job', Value: String(c.job) },
  { Key: 'spotrun:node', Value: String(c.node) }, { Key: 'spotrun:attempt', Value: String(c.attempt) },
];

function runInput(c) {
  const input = {
    ImageId: c.image, InstanceType: c.type, MinCount: 1, MaxCount: 1, ClientToken: c.token,
    UserData: Buffer.from(c.user_data).toString('base64'),
    InstanceInitiatedShutdownBehavior: 'terminate',
    MetadataOptions: { HttpTokens: 'required', HttpEndpoint: 'enabled' },
    TagSpecifications: [{ ResourceType: 'instance', Tags: tagList(c) }, { ResourceType: 'volume', Tags: tagList(c) }],
  };
  if (c.key) input.KeyName = c.key;
  if (c.subnet) input.SubnetId = c.subnet; else if (c.zone) input.Placement = { AvailabilityZone: c.zone };
  if (c.sg) input.SecurityGroupIds = [c.sg];
  if (c.profile) input.IamInstanceProfile = { Name: c.profile };
  if (c.spot) {
    input.InstanceMarketOptions = { MarketType: 'spot', SpotOptions: { SpotInstanceType: 'one-time', InstanceInterruptionBehavior: 'terminate' } };
    if (c.max_price_micros > 0) input.InstanceMarketOptions.SpotOptions.MaxPrice = (c.max_price_micros / 1e6).toFixed(6);
  }
  return input;
}

async function testRun() {
  const userData = "#!/bin/sh\necho 'spotrun node' & more <stuff> é\n";
  const cases = [
    { name: 'RunInstances spot, all settings', image: 'ami-0123456789abcdef0', subnet: 'subnet-0abc1234', sg: 'sg-0def5678', key: 'ops-key', profile: 'spotrun-node', token: 'sr-cluster-a-42-3', type: 'p4d.24xlarge', zone: 'us-east-1b', spot: true, max_price_micros: 12345678, cluster: 'cluster-a', job: 7, node: 42, attempt: 3, user_data: userData },
    { name: 'RunInstances on-demand in a zone', image: 'ami-0123456789abcdef0', token: 'sr-c-1-1', type: 'g5.xlarge', zone: 'us-east-1d', spot: false, max_price_micros: 0, cluster: 'c', job: 1, node: 1, attempt: 1, user_data: 'x' },
    { name: 'RunInstances spot, no max price', image: 'ami-1', token: 'sr-c-2-1', type: 'g5.xlarge', spot: true, max_price_micros: 0, cluster: 'c', job: 1, node: 2, attempt: 1, user_data: '#!/bin/sh\ntrue\n' },
  ];
  for (const c of cases) {
    for (const mode of ['run', 'driver']) {
      const token = c.name.startsWith('RunInstances spot, all') && mode === 'run' ? TOKEN : null;
      const name = `${c.name} (${mode === 'run' ? 'ec2_run_instances' : 'compute driver'}${token ? ', session token' : ''})`;
      const { sdk, tool } = await compare(name, [new ec2sdk.RunInstancesCommand(runInput(c))], [mode, JSON.stringify(c)], token);
      if (!tool) continue;
      const si = sdk[0].Instances[0];
      check(`${name}: both read the instance id`, si.InstanceId === tool.id && /^i-/.test(tool.id), `${si.InstanceId} vs ${tool.id}`);
      check(`${name}: both read zone and type`, si.Placement.AvailabilityZone === tool.zone && si.InstanceType === tool.type);
      check(`${name}: both read the lifecycle`, (si.InstanceLifecycle === 'spot') === tool.spot && tool.spot === c.spot);
      check(`${name}: tags read back`, tool.cluster === c.cluster && tool.node === c.node && tool.job === c.job && tool.attempt === c.attempt &&
        si.Tags.find((t) => t.Key === 'spotrun:node').Value === String(c.node));
      check(`${name}: blob holds the reservation`, tool.blob && tool.blob.reservation_id === 'r-0fedcba9876543210' && tool.blob.instance_id === tool.id);
    }
  }
}

async function testDescribe() {
  const { sdk, tool } = await compare('DescribeInstances by cluster tag, two pages', [
    new ec2sdk.DescribeInstancesCommand({ Filters: [{ Name: 'tag:spotrun:cluster', Values: ['cluster-a'] }], MaxResults: 1000 }),
    new ec2sdk.DescribeInstancesCommand({ Filters: [{ Name: 'tag:spotrun:cluster', Values: ['cluster-a'] }], MaxResults: 1000, NextToken: 'page-2' }),
  ], ['describe', 'cluster-a']);
  if (!tool) return;
  const sdkIds = sdk.flatMap((r) => r.Reservations.flatMap((x) => x.Instances.map((i) => i.InstanceId)));
  check('DescribeInstances: both read the same instances', JSON.stringify(sdkIds) === JSON.stringify(tool.map((i) => i.id)), `${sdkIds} vs ${tool.map((i) => i.id)}`);
  const states = sdk.flatMap((r) => r.Reservations.flatMap((x) => x.Instances.map((i) => i.State.Name)));
  check('DescribeInstances: states mapped (running, terminated, shutting-down)', JSON.stringify(states) === '["running","terminated","shutting-down"]' &&
    JSON.stringify(tool.map((i) => i.state)) === '[1,3,2]', JSON.stringify(tool.map((i) => i.state)));
  check('DescribeInstances: spot reclaim reason read', tool[1].reason === 'Server.SpotInstanceTermination');
  check('DescribeInstances: escaped tag text does not confuse the cluster tag', tool.every((i) => i.cluster === 'cluster-a'));

  const { tool: t2 } = await compare('DescribeInstances by id', [
    new ec2sdk.DescribeInstancesCommand({ Filters: [{ Name: 'tag:spotrun:cluster', Values: ['c'] }], InstanceIds: ['i-1', 'i-2'] }),
    new ec2sdk.DescribeInstancesCommand({ Filters: [{ Name: 'tag:spotrun:cluster', Values: ['c'] }], InstanceIds: ['i-1', 'i-2'], NextToken: 'page-2' }),
  ], ['describe', 'c', 'i-1', 'i-2']);
  check('DescribeInstances by id: result', Array.isArray(t2) && t2.length === 3);
}

async function testTerminate() {
  await compare('TerminateInstances', [new ec2sdk.TerminateInstancesCommand({ InstanceIds: ['i-0a', 'i-0b', 'i-0c'] })],
    ['terminate', 'i-0a', 'i-0b', 'i-0c']);
}

async function testSpot() {
  const since = Date.UTC(2026, 10, 30, 12, 0, 0) / 1000;
  const { sdk, tool } = await compare('DescribeSpotPriceHistory in one zone', [new ec2sdk.DescribeSpotPriceHistoryCommand({
    InstanceTypes: ['p4d.24xlarge'], ProductDescriptions: ['Linux/UNIX'], StartTime: new Date(since * 1000),
    AvailabilityZone: 'us-east-1a', MaxResults: 50,
  })], ['spot', 'p4d.24xlarge', 'us-east-1a', String(since), '50']);
  if (!tool) return;
  const sp = sdk[0].SpotPriceHistory;
  check('DescribeSpotPriceHistory: both read the prices', sp.length === tool.length && sp.every((p, i) =>
    Math.round(parseFloat(p.SpotPrice) * 1e6) === tool[i].micros && p.Timestamp.getTime() / 1000 === tool[i].at &&
    p.AvailabilityZone === tool[i].zone && tool[i].product === 'Linux/UNIX'), JSON.stringify(tool));
  await compare('DescribeSpotPriceHistory in every zone', [new ec2sdk.DescribeSpotPriceHistoryCommand({
    InstanceTypes: ['g5.xlarge'], ProductDescriptions: ['Linux/UNIX'], StartTime: new Date(since * 1000), MaxResults: 1000,
  })], ['spot', 'g5.xlarge', '-', String(since), '0']);
}

async function testOfferings() {
  const { sdk, tool } = await compare('DescribeInstanceTypeOfferings', [new ec2sdk.DescribeInstanceTypeOfferingsCommand({
    LocationType: 'availability-zone', Filters: [{ Name: 'instance-type', Values: ['p5.48xlarge'] }], MaxResults: 1000,
  })], ['zones', 'p5.48xlarge']);
  if (!tool) return;
  const z = sdk[0].InstanceTypeOfferings.map((o) => o.Location).sort();
  check('DescribeInstanceTypeOfferings: both read the zones', JSON.stringify(z) === JSON.stringify(tool), `${z} vs ${tool}`);
}

async function testErrors() {
  const want = {
    InsufficientInstanceCapacity: 'capacity', SpotMaxPriceTooLow: 'capacity', MaxSpotInstanceCountExceeded: 'quota',
    RequestLimitExceeded: 'throttle', UnauthorizedOperation: 'auth', AuthFailure: 'auth',
    InvalidParameterValue: 'invalid', InternalError: 'transient',
  };
  const c = { image: 'ami-1', token: 'sr-e-1-1', type: 'g5.xlarge', spot: true, cluster: 'e', job: 1, node: 1, attempt: 1, user_data: 'x' };
  for (const [code, cls] of Object.entries(want)) {
    const msg = `There is no ${code} <test> & co.`;
    inject = { code, message: msg };
    let sdkErr = null;
    try { await sdkClient().send(new ec2sdk.RunInstancesCommand(runInput(c))); } catch (e) { sdkErr = e; }
    check(`error ${code}: the SDK reads our error document`, sdkErr && sdkErr.name === code && sdkErr.message === msg, sdkErr && `${sdkErr.name}: ${sdkErr.message}`);
    inject = { code, message: msg };
    const out = await runTool(['run', JSON.stringify(c)]);
    check(`error ${code}: classified ${cls}`, out.class === cls && out.code === code, JSON.stringify(out));
    check(`error ${code}: message names operation, code and text`, out.error === `EC2 RunInstances: ${code}: ${msg}`, out.error);
    check(`error ${code}: no secret in the message`, !out.error.includes(SECRET) && !out.error.includes(AKID));
    check(`error ${code}: nothing on stderr`, !out.stderr, out.stderr);
  }
}

(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'sr-conf-'));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${server.address().port}`;
  let refused = false;
  try { assertLoopback('https://ec2.us-east-1.amazonaws.com'); } catch (e) { refused = true; }
  check('the suite refuses a non-loopback endpoint', refused);
  await testRun();
  await testDescribe();
  await testTerminate();
  await testSpot();
  await testOfferings();
  await testErrors();
  server.close();
  fs.rmSync(home, { recursive: true, force: true });
  done('ec2 driver vs @aws-sdk/client-ec2');
})().catch((e) => { console.error(e); process.exit(1); });
