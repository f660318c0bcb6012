// ec2_fixtures.js - EC2 Query API answers (2016-11-15 shapes) for the
// capture server, built from the request's own parameters so that the SDK
// and the driver get the same, consistent answer.  Test-only.
'use strict';

const NS = 'http://ec2.amazonaws.com/doc/2016-11-15/';
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const reqId = () => '7a62c49f-347e-4fc4-9331-6e8eEXAMPLE';

function tagsFrom(p, spec) {
  const out = [];
  for (let i = 1; p[`TagSpecification.${spec}.Tag.${i}.Key`] !== undefined; i++)
    out.push([p[`TagSpecification.${spec}.Tag.${i}.Key`], p[`TagSpecification.${spec}.Tag.${i}.Value`]]);
  return out;
}

function instanceXml(inst) {
  const tags = inst.tags.map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`).join('');
  return `<item>
        <instanceId>${inst.id}</instanceId>
        <imageId>${esc(inst.image)}</imageId>
        <instanceState><code>${inst.state === 'running' ? 16 : inst.state === 'terminated' ? 48 : 0}</code><name>${inst.state}</name></instanceState>
        <privateDnsName>ip-10-0-1-17.ec2.internal</privateDnsName>
        <dnsName/>
        <reason/>
        <amiLaunchIndex>0</amiLaunchIndex>
        <productCodes/>
        <instanceType>${esc(inst.type)}</instanceType>
        <launchTime>2026-11-30T17:00:00.000Z</launchTime>
        <placement><availabilityZone>${esc(inst.zone)}</availabilityZone><groupName/><tenancy>default</tenancy></placement>
        <monitoring><state>disabled</state></monitoring>
        <subnetId>${esc(inst.subnet)}</subnetId>
        <vpcId>vpc-0f1e2d3c4b5a69788</vpcId>
        <privateIpAddress>10.0.1.17</privateIpAddress>
        <sourceDestCheck>true</sourceDestCheck>
        <groupSet><item><groupId>sg-0123456789abcdef0</groupId><groupName>default</groupName></item></groupSet>
        ${inst.spot ? '<instanceLifecycle>spot</instanceLifecycle><spotInstanceRequestId>sir-9x8y7z6w</spotInstanceRequestId>' : ''}
        ${inst.reason ? `<stateReason><code>${esc(inst.reason)}</code><message>${esc(inst.reason)}</message></stateReason>` : ''}
        <architecture>x86_64</architecture>
        <rootDeviceType>ebs</rootDeviceType>
        <rootDeviceName>/dev/xvda</rootDeviceName>
        <blockDeviceMapping/>
        <virtualizationType>hvm</virtualizationType>
        <clientToken>${esc(inst.token || '')}</clientToken>
        <tagSet>${tags}</tagSet>
        <hypervisor>xen</hypervisor>
        <networkInterfaceSet/>
        <ebsOptimized>false</ebsOptimized>
        <metadataOptions><state>pending</state><httpTokens>required</httpTokens><httpPutResponseHopLimit>1</httpPutResponseHopLimit><httpEndpoint>enabled</httpEndpoint></metadataOptions>
      </item>`;
}

// The instance RunInstances "started" for request parameters p.
function instanceFor(p) {
  return {
    id: 'i-0a1b2c3d4e5f60718', image: p.ImageId, type: p.InstanceType, state: 'pending',
    zone: p['Placement.AvailabilityZone'] || 'us-east-1c', subnet: p.SubnetId || 'subnet-0abc1234',
    spot: p['InstanceMarketOptions.MarketType'] === 'spot', token: p.ClientToken,
    tags: tagsFrom(p, 1), reason: 'pending',
  };
}

function runInstances(p) {
  return `<?xml version="1.0" encoding="UTF-8"?>
<RunInstancesResponse xmlns="${NS}">
    <requestId>${reqId()}</requestId>
    <reservationId>r-0fedcba9876543210</reservationId>
    <ownerId>123456789012</ownerId>
    <groupSet/>
    <instancesSet>
      ${instanceXml(instanceFor(p))}
    </instancesSet>
</RunInstancesResponse>`;
}

// Two pages: the first carries nextToken "page-2".
function describeInstances(p) {
  const cluster = p['Filter.1.Value.1'] || '';
  const tags = (node) => [['spotrun:cluster', cluster], ['spotrun:job', '7'], ['spotrun:node', String(node)], ['spotrun:attempt', '1'], ['Name', 'spotrun & co <node>']];
  const page1 = !p.NextToken;
  const insts = page1
    ? [{ id: 'i-00000000000000001', image: 'ami-1', type: 'g5.xlarge', state: 'running', zone: 'us-east-1a', subnet: 'subnet-1', spot: true, tags: tags(11) },
       { id: 'i-00000000000000002', image: 'ami-1', type: 'g5.xlarge', state: 'terminated', zone: 'us-east-1b', subnet: 'subnet-2', spot: true, tags: tags(12), reason: 'Server.SpotInstanceTermination' }]
    : [{ id: 'i-00000000000000003', image: 'ami-1', type: 'p4d.24xlarge', state: 'shutting-down', zone: 'us-east-1d', subnet: 'subnet-3', spot: false, tags: tags(13) }];
  const resv = insts.map((i, k) => `<item><reservationId>r-00${k}</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet>${instanceXml(i)}</instancesSet></item>`).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="${NS}">
    <requestId>${reqId()}</requestId>
    <reservationSet>${resv}</reservationSet>
    ${page1 ? '<nextToken>page-2</nextToken>' : ''}
</DescribeInstancesResponse>`;
}

function terminateInstances(p) {
  const items = [];
  for (let i = 1; p[`InstanceId.${i}`] !== undefined; i++)
    items.push(`<item><instanceId>${esc(p[`InstanceId.${i}`])}</instanceId><currentState><code>32</code><name>shutting-down</name></currentState><previousState><code>16</code><name>running</name></previousState></item>`);
  return `<?xml version="1.0" encoding="UTF-8"?>
<TerminateInstancesResponse xmlns="${NS}">
    <requestId>${reqId()}</requestId>
    <instancesSet>${items.join('')}</instancesSet>
</TerminateInstancesResponse>`;
}

function spotPriceHistory(p) {
  const t = p['InstanceType.1'];
  const zone = p.AvailabilityZone;
  const rows = [['us-east-1a', '0.412100', '2026-11-30T16:55:02.000Z'], ['us-east-1b', '0.398700', '2026-11-30T16:40:11.000Z'], ['us-east-1a', '0.401000', '2026-11-30T15:02:59.000Z']]
    .filter(([z]) => !zone || z === zone);
  const items = rows.map(([z, price, ts]) => `<item><instanceType>${esc(t)}</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>${price}</spotPrice><timestamp>${ts}</timestamp><availabilityZone>${z}</availabilityZone></item>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
<DescribeSpotPriceHistoryResponse xmlns="${NS}">
    <requestId>${reqId()}</requestId>
    <spotPriceHistorySet>${items}</spotPriceHistorySet>
    <nextToken/>
</DescribeSpotPriceHistoryResponse>`;
}

function instanceTypeOfferings(p) {
  const t = p['Filter.1.Value.1'];
  const zones = ['us-east-1f', 'us-east-1a', 'us-east-1c'];
  const items = zones.map((z) => `<item><instanceType>${esc(t)}</instanceType><locationType>availability-zone</locationType><location>${z}</location></item>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstanceTypeOfferingsResponse xmlns="${NS}">
    <requestId>${reqId()}</requestId>
    <instanceTypeOfferingSet>${items}</instanceTypeOfferingSet>
</DescribeInstanceTypeOfferingsResponse>`;
}

function errorXml(code, message) {
  return `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>${esc(code)}</Code><Message>${esc(message)}</Message></Error></Errors><RequestID>${reqId()}</RequestID></Response>`;
}

// HTTP status EC2 uses for each error code we map.
const ERROR_STATUS = {
  InsufficientInstanceCapacity: 500, SpotMaxPriceTooLow: 400, MaxSpotInstanceCountExceeded: 400,
  RequestLimitExceeded: 503, UnauthorizedOperation: 403, AuthFailure: 401, InvalidParameterValue: 400,
  InternalError: 500,
};

const ANSWERS = {
  RunInstances: runInstances, DescribeInstances: describeInstances, TerminateInstances: terminateInstances,
  DescribeSpotPriceHistory: spotPriceHistory, DescribeInstanceTypeOfferings: instanceTypeOfferings,
};

module.exports = { ANSWERS, errorXml, ERROR_STATUS, instanceFor };
