// ec2_emulator_test.js - the official SDK (@aws-sdk/client-ec2) against
// `spotrun ec2-emulator` (the local spot cloud's EC2 Query API): the SDK
// must parse every answer the driver relies on, and read the same values
// the driver reads (through build/conformance/ec2_tool).
// Usage: node ec2_emulator_test.js BUILD
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');
const { spawn, execFile } = require('child_process');
const ec2sdk = require('@aws-sdk/client-ec2');
const { assertLoopback, tally } = require('./lib');

const BUILD = path.resolve(process.argv[2] || '../../build');
const ROOT = path.resolve(__dirname, '..', '..');
const TYPE = 'g5.xlarge';
const { check, done } = tally();

function tool(url, home, args) {
  assertLoopback(url);
  const env = { PATH: process.env.PATH, HOME: home, AWS_EC2_METADATA_DISABLED: 'true', AWS_ACCESS_KEY_ID: 'AKIAEMU',
    AWS_SECRET_ACCESS_KEY: 'emusecret', AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_EC2: url, SPOTRUN_LOG_LEVEL: 'error' };
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS']) if (process.env[k]) env[k] = process.env[k];
  return new Promise((resolve) => execFile(path.join(BUILD, 'conformance', 'ec2_tool'), args, { env, timeout: 30000 },
    (err, stdout, stderr) => { try { resolve(JSON.parse(stdout)); } catch (e) { resolve({ error: stdout + stderr }); } }));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sr-emu-'));
  // zone ids of the catalog; capacity pinned so the test does not depend on the trace's phase
  const emu = spawn(path.join(BUILD, 'bin', 'spotrun'), ['ec2-emulator', '--work-dir', work, '--data', path.join(ROOT, 'data'),
    '--notice-s', '1', '--capacity', `use1-az2:${TYPE}=plenty`, '--capacity', `use1-az4:${TYPE}=none`],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, SPOTRUN_LOG_LEVEL: 'error', ASAN_OPTIONS: `${process.env.ASAN_OPTIONS || ''}:exitcode=23` } });
  const url = await new Promise((resolve, reject) => {
    readline.createInterface({ input: emu.stdout }).once('line', resolve);
    emu.once('exit', (c) => reject(new Error(`ec2-emulator exited ${c}`)));
  });
  assertLoopback(url);
  const sdk = new ec2sdk.EC2Client({ region: 'us-east-1', endpoint: url, maxAttempts: 1,
    credentials: { accessKeyId: 'AKIAEMU', secretAccessKey: 'emusecret' } });
  const tags = [{ Key: 'spotrun:cluster', Value: 'emu-c' }, { Key: 'spotrun:job', Value: '4' },
    { Key: 'spotrun:node', Value: '8' }, { Key: 'spotrun:attempt', Value: '1' }];
  try {
    // DescribeInstanceTypeOfferings
    const off = await sdk.send(new ec2sdk.DescribeInstanceTypeOfferingsCommand({ LocationType: 'availability-zone',
      Filters: [{ Name: 'instance-type', Values: [TYPE] }], MaxResults: 1000 }));
    const zones = off.InstanceTypeOfferings.map((o) => o.Location).sort();
    check('offerings: the SDK reads the zones', zones.length >= 3 && zones.includes('use1-az2'), JSON.stringify(off.InstanceTypeOfferings));
    check('offerings: type and location type', off.InstanceTypeOfferings.every((o) => o.InstanceType === TYPE && o.LocationType === 'availability-zone'));
    const tz = await tool(url, work, ['zones', TYPE]);
    check('offerings: the driver reads the same zones', JSON.stringify(tz.ok) === JSON.stringify(zones), JSON.stringify(tz));

    // DescribeSpotPriceHistory
    const since = new Date(Date.now() - 3 * 3600 * 1000);
    const sp = await sdk.send(new ec2sdk.DescribeSpotPriceHistoryCommand({ InstanceTypes: [TYPE], ProductDescriptions: ['Linux/UNIX'],
      StartTime: since, AvailabilityZone: 'use1-az2', MaxResults: 20 }));
    check('spot prices: the SDK reads prices and times', sp.SpotPriceHistory.length > 0 && sp.SpotPriceHistory.every((p) =>
      parseFloat(p.SpotPrice) > 0 && p.Timestamp instanceof Date && !isNaN(p.Timestamp) && p.AvailabilityZone === 'use1-az2' &&
      p.ProductDescription === 'Linux/UNIX'), JSON.stringify(sp.SpotPriceHistory.slice(0, 2)));
    const ts = await tool(url, work, ['spot', TYPE, 'use1-az2', String(Math.floor(since / 1000)), '20']);
    check('spot prices: the driver reads the same prices', ts.ok && ts.ok.length === sp.SpotPriceHistory.length &&
      ts.ok.every((p, i) => p.micros === Math.round(parseFloat(sp.SpotPriceHistory[i].SpotPrice) * 1e6) &&
        p.at === sp.SpotPriceHistory[i].Timestamp.getTime() / 1000), JSON.stringify(ts).slice(0, 300));

    // RunInstances: capacity error, then a spot launch
    let err = null;
    try {
      await sdk.send(new ec2sdk.RunInstancesCommand({ ImageId: 'ami-emu', InstanceType: TYPE, MinCount: 1, MaxCount: 1, ClientToken: 'sdk-1',
        Placement: { AvailabilityZone: 'use1-az4' }, InstanceMarketOptions: { MarketType: 'spot', SpotOptions: { SpotInstanceType: 'one-time' } } }));
    } catch (e) { err = e; }
    check('run: the SDK reads InsufficientInstanceCapacity', err && err.name === 'InsufficientInstanceCapacity', err && err.name);
    const ud = Buffer.from('#!/bin/sh\necho "$SPOTRUN_IMDS_URL" > "$SPOTRUN_NODE_ROOT/imds"\nexec sleep 600\n').toString('base64');
    const runInput = { ImageId: 'ami-emu', InstanceType: TYPE, MinCount: 1, MaxCount: 1,
      ClientToken: 'sdk-2', UserData: ud, Placement: { AvailabilityZone: 'use1-az2' },
      InstanceMarketOptions: { MarketType: 'spot', SpotOptions: { SpotInstanceType: 'one-time', InstanceInterruptionBehavior: 'terminate' } },
      TagSpecifications: [{ ResourceType: 'instance', Tags: tags }] };
    const run = await sdk.send(new ec2sdk.RunInstancesCommand(runInput));
    const inst = run.Instances[0];
    check('run: the SDK reads the instance', /^i-[0-9a-f]{17}$/.test(inst.InstanceId) && inst.InstanceType === TYPE &&
      inst.Placement.AvailabilityZone === 'use1-az2' && inst.InstanceLifecycle === 'spot' && inst.State.Name === 'pending' &&
      inst.LaunchTime instanceof Date && run.ReservationId, JSON.stringify(inst).slice(0, 400));
    check('run: tags read back', inst.Tags.length === 4 && inst.Tags.find((t) => t.Key === 'spotrun:node').Value === '8');
    const again = await sdk.send(new ec2sdk.RunInstancesCommand(runInput));
    check('run: the same ClientToken returns the same instance', again.Instances[0].InstanceId === inst.InstanceId);
    err = null;
    try {
      await sdk.send(new ec2sdk.RunInstancesCommand({ ...runInput, UserData: Buffer.from('#!/bin/sh\n').toString('base64') }));
    } catch (e) { err = e; }
    check('run: the same ClientToken with other parameters is IdempotentParameterMismatch',
      err && err.name === 'IdempotentParameterMismatch', err && err.name);
    let imdsFile = null;
    for (let i = 0; i < 500 && !imdsFile; i++) {
      try { imdsFile = fs.readFileSync(path.join(work, inst.InstanceId, 'root', 'imds'), 'utf8').trim(); } catch (e) { await sleep(20); }
    }
    check('run: the instance process started with its own IMDS URL', imdsFile === `${url}/imds/${inst.InstanceId}`, imdsFile);

    // DescribeInstances by the cluster tag, SDK and driver
    let desc;
    for (let i = 0; i < 500; i++) {
      desc = await sdk.send(new ec2sdk.DescribeInstancesCommand({ Filters: [{ Name: 'tag:spotrun:cluster', Values: ['emu-c'] }], MaxResults: 1000 }));
      if (desc.Reservations[0] && desc.Reservations[0].Instances[0].State.Name === 'running') break;
      await sleep(20);
    }
    const di = desc.Reservations.flatMap((r) => r.Instances);
    check('describe: the SDK reads the running instance', di.length === 1 && di[0].InstanceId === inst.InstanceId && di[0].State.Name === 'running' &&
      di[0].State.Code === 16, JSON.stringify(di).slice(0, 300));
    const td = await tool(url, work, ['describe', 'emu-c']);
    check('describe: the driver reads the same', td.ok && td.ok.length === 1 && td.ok[0].id === inst.InstanceId && td.ok[0].state === 1 &&
      td.ok[0].node === 8 && td.ok[0].spot === true, JSON.stringify(td).slice(0, 300));
    const other = await sdk.send(new ec2sdk.DescribeInstancesCommand({ Filters: [{ Name: 'tag:spotrun:cluster', Values: ['nobody'] }] }));
    check('describe: the tag filter excludes other clusters', other.Reservations.length === 0);
    err = null;
    try { await sdk.send(new ec2sdk.DescribeInstancesCommand({ InstanceIds: ['i-00000000000000000'] })); } catch (e) { err = e; }
    check('describe: an unknown id is InvalidInstanceID.NotFound', err && err.name === 'InvalidInstanceID.NotFound', err && err.name);

    // TerminateInstances
    const term = await sdk.send(new ec2sdk.TerminateInstancesCommand({ InstanceIds: [inst.InstanceId] }));
    const ti = term.TerminatingInstances[0];
    check('terminate: the SDK reads current and previous state', ti.InstanceId === inst.InstanceId && ti.CurrentState.Name === 'shutting-down' &&
      ti.PreviousState.Name === 'running', JSON.stringify(ti));
    let gone = null;
    for (let i = 0; i < 500 && !gone; i++) {
      const d = await sdk.send(new ec2sdk.DescribeInstancesCommand({ InstanceIds: [inst.InstanceId] }));
      const x = d.Reservations[0].Instances[0];
      if (x.State.Name === 'terminated') gone = x; else await sleep(20);
    }
    check('terminate: the instance ends terminated with a state reason', gone && gone.StateReason.Code === 'Client.UserInitiatedShutdown', gone && JSON.stringify(gone.StateReason));

    // Authorization is required
    const anon = await fetch(url + '/', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'Action=DescribeInstances&Version=2016-11-15' });
    check('an unsigned request is refused with AuthFailure', anon.status === 401 && (await anon.text()).includes('<Code>AuthFailure</Code>'));
  } finally {
    emu.kill('SIGTERM');
    const code = await new Promise((r) => emu.once('exit', (c) => r(c)));
    check('the emulator stops cleanly on SIGTERM (exit 0, no sanitizer report)', code === 0, `exit ${code}`);
    fs.rmSync(work, { recursive: true, force: true });
  }
  done('SDK vs spotrun ec2-emulator');
})().catch((e) => { console.error(e); process.exit(1); });
