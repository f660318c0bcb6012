// s3rver-run.js DIR BUCKET... - start @20minutes/s3rver on 127.0.0.1 on an
// ephemeral port with the given buckets, print "PORT <n>" once listening,
// and run until killed.  The package ships no CLI entry point, so the
// tests start it through its documented class API.  Signatures are
// verified (allowMismatchedSignatures stays off); the only account is
// S3RVER / S3RVER.
'use strict';
const S3rver = require('@20minutes/s3rver');
const [dir, ...buckets] = process.argv.slice(2);
if (!dir) {
  console.error('usage: s3rver-run.js DIR BUCKET...');
  process.exit(2);
}
new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory: dir,
  silent: true,
  configureBuckets: buckets.map((name) => ({ name, configs: [] })),
})
  .run()
  .then(({ port }) => console.log(`PORT ${port}`))
  .catch((err) => {
    console.error(`s3rver: ${err.message}`);
    process.exit(1);
  });
