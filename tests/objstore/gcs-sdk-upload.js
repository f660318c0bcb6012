// gcs-sdk-upload.js FILE BUCKET OBJECT PART_BYTES OUT.json - upload FILE
// with Google's own Node.js client (@google-cloud/storage, its
// TransferManager.uploadFileInChunks: the XML API multipart upload with a
// CRC32C per part) and write every request it made to OUT.json as
// [{method, host, path, query, headers, body_len, body?}], body for the
// small XML ones.  Nothing leaves the process: the client's auth layer is
// replaced by a recorder (the documented `authClient` option), which
// answers the way the XML API does (an UploadId, each part's ETag = the
// MD5 of its bytes, quoted).  tests/py/test_objstore_gcs.py runs spotrun's
// gs:// upload of the same bytes and compares the two.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const { AuthClient } = require('google-auth-library');
const { Storage, TransferManager } = require('@google-cloud/storage');

const [file, bucket, object, partBytes, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: gcs-sdk-upload.js FILE BUCKET OBJECT PART_BYTES OUT.json');
  process.exit(2);
}
const log = [];

class Recorder extends AuthClient {
  async getAccessToken() { return { token: 'recorder' }; }
  async getRequestHeaders() { return {}; }
  async request(opts) {
    const u = new URL(opts.url);
    const headers = {};
    for (const [k, v] of Object.entries(opts.headers || {}))
      headers[k.toLowerCase()] = String(v);
    const body = opts.body === undefined ? Buffer.alloc(0)
      : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(String(opts.body));
    const rec = {
      method: opts.method, host: u.host, path: decodeURIComponent(u.pathname),
      query: Object.fromEntries(u.searchParams), headers, body_len: body.length,
    };
    if (body.length < 65536 && !u.searchParams.has('partNumber'))
      rec.body = body.toString();
    log.push(rec);
    if (u.searchParams.has('uploads'))
      return { status: 200, headers: {}, data:
        '<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult>' +
        `<Bucket>${bucket}</Bucket><Key>${object}</Key>` +
        '<UploadId>sdk-upload-1</UploadId></InitiateMultipartUploadResult>' };
    if (u.searchParams.has('partNumber'))
      return { status: 200, data: '', headers: {
        etag: '"' + crypto.createHash('md5').update(body).digest('hex') + '"' } };
    return { status: 200, headers: {}, data:
      '<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult>' +
      `<Bucket>${bucket}</Bucket><Key>${object}</Key><ETag>"x"</ETag>` +
      '</CompleteMultipartUploadResult>' };
  }
}

async function main() {
  const storage = new Storage({ projectId: 'spotrun-test',
    authClient: new Recorder(), retryOptions: { autoRetry: false } });
  const tm = new TransferManager(storage.bucket(bucket));
  await tm.uploadFileInChunks(file, { uploadName: object,
    chunkSizeBytes: Number(partBytes), concurrencyLimit: 1 });
  fs.writeFileSync(out, JSON.stringify(log, null, 1));
}
main().catch((err) => {
  console.error(`gcs-sdk-upload: ${err.stack || err}`);
  process.exit(1);
});
