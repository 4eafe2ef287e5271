// The S3 test server of the bats suites: @20minutes/s3rver (a fork of s3rver
// that checks SigV4 header signatures; keys S3RVER/S3RVER), which has no
// command line of its own, started on a loopback port with one bucket, and
// mended where it differs from S3 in what bufferlock's S3 store relies on:
//
//   - a PUT with Transfer-Encoding: chunked and no Content-Length is 501
//     NotImplemented (s3rver stores it);
//   - AbortMultipartUpload (DELETE ?uploadId=) and ListMultipartUploads
//     (GET ?uploads) exist (405 and 501 in s3rver), signatures checked;
//   - a suffix range (bytes=-N) is the last N bytes (s3rver: the first N);
//   - ListObjectsV2's continuation tokens work under OpenSSL 3 (s3rver makes
//     them with single DES, which OpenSSL 3 disables: a 500 past 1,000 keys).
//
//   node s3_server.js MODULES DIR BUCKET [PORT]
//
// MODULES is the node_modules directory npm installed s3rver into; the
// objects live in DIR. PORT 0 (the default) takes a free port; "ready PORT"
// is printed once the server listens. Runs on Debian 12's node 18.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const [modules, directory, bucket, port = '0'] = process.argv.slice(2);
if (!modules || !directory || !bucket) {
  process.stderr.write('usage: node s3_server.js MODULES DIR BUCKET [PORT]\n');
  process.exit(64);
}
const lib = path.join(modules, '@20minutes', 's3rver', 'lib');
const S3rver = require(path.join(modules, '@20minutes', 's3rver'));
const S3Error = require(path.join(lib, 'models', 'error'));
const objectCtrl = require(path.join(lib, 'controllers', 'object'));
const router = require(path.join(lib, 'routes'));

// Single DES with key K is two-key triple DES with K twice: the same bytes.
for (const name of ['createCipheriv', 'createDecipheriv']) {
  const original = crypto[name];
  crypto[name] = (algorithm, key, iv, options) =>
    algorithm === 'des'
      ? original('des-ede-cbc', Buffer.concat([key, key]), iv, options)
      : original(algorithm, key, iv, options);
}

// bytes=-N: the last N bytes, as S3 serves them (s3rver reads it as 0-N).
const getObject = objectCtrl.getObject;
objectCtrl.getObject = async (ctx) => {
  const suffix = /^bytes=-(\d+)$/.exec(ctx.headers.range || '');
  if (suffix) {
    const file = ctx.store.getResourcePath(ctx.params.bucket, ctx.params.key, 'object');
    const size = await fs.promises.stat(file).then((s) => s.size, () => null);
    if (size !== null) {
      const n = Math.min(Number(suffix[1]), size);
      ctx.headers.range = n > 0 ? `bytes=${size - n}-${size - 1}` : `bytes=${size}-`;
    }
  }
  return getObject(ctx);
};

function uploadsDir(ctx) {
  return ctx.store.getResourcePath(ctx.params.bucket, undefined, 'uploads');
}

async function abortMultipartUpload(ctx) {
  const id = ctx.query.uploadId;
  const dir = path.join(uploadsDir(ctx), path.basename(String(id)));
  const key = await fs.promises.readFile(path.join(dir, 'key'), 'utf8').catch(() => null);
  if (key === null || key !== ctx.params.key) {
    throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: id });
  }
  await fs.promises.rm(dir, { recursive: true, force: true });
  ctx.status = 204;
}

async function listMultipartUploads(ctx) {
  const root = uploadsDir(ctx);
  const prefix = ctx.query.prefix || '';
  const ids = await fs.promises.readdir(root).catch(() => []);
  const uploads = [];
  for (const id of ids.sort()) {
    const dir = path.join(root, id);
    const key = await fs.promises.readFile(path.join(dir, 'key'), 'utf8').catch(() => null);
    if (key === null || !key.startsWith(prefix)) continue;
    const { mtime } = await fs.promises.stat(dir);
    uploads.push({ Key: key, UploadId: id, Initiated: mtime.toISOString(), StorageClass: 'STANDARD' });
  }
  uploads.sort((a, b) => (a.Key < b.Key ? -1 : a.Key > b.Key ? 1 : 0));
  ctx.body = {
    ListMultipartUploadsResult: {
      '@': { xmlns: 'http://s3.amazonaws.com/doc/2006-03-01/' },
      Bucket: ctx.params.bucket,
      KeyMarker: '',
      UploadIdMarker: '',
      Prefix: prefix,
      MaxUploads: 1000,
      IsTruncated: false,
      Upload: uploads,
    },
  };
}

// The route's own handler (the last of its layer), called unless `take` answers.
function extendRoute(method, routePath, take) {
  const layer = router.stack.find((l) => l.path === routePath && l.methods.includes(method));
  if (!layer) throw new Error(`s3rver has no ${method} ${routePath} route to extend`);
  const last = layer.stack.length - 1;
  const handler = layer.stack[last];
  layer.stack[last] = (ctx, next) => take(ctx) || handler(ctx, next);
}
extendRoute('DELETE', '/:bucket/:key+', (ctx) =>
  ctx.params.queryMethod === 'uploadId' ? abortMultipartUpload(ctx) : null,
);
extendRoute('GET', '/:bucket', (ctx) =>
  ctx.params.queryMethod === 'uploads' ? listMultipartUploads(ctx) : null,
);

const server = new S3rver({
  port: Number(port),
  address: '127.0.0.1',
  directory,
  silent: true,
  configureBuckets: [{ name: bucket }],
});

// S3 refuses a chunked upload of unknown length (an aws-chunked one carries
// x-amz-decoded-content-length); s3rver would store it.
server.middleware.unshift(async (ctx, next) => {
  const chunked = /chunked/i.test(ctx.get('transfer-encoding'));
  if (ctx.method === 'PUT' && chunked && !ctx.get('content-length') && !ctx.get('x-amz-decoded-content-length')) {
    throw new S3Error('NotImplemented', 'A header you provided implies functionality that is not implemented', {
      Header: 'Transfer-Encoding',
    });
  }
  return next();
});

server.run().then(
  ({ port: bound }) => process.stdout.write(`ready ${bound}\n`),
  (err) => {
    process.stderr.write(`s3_server: ${err.message}\n`);
    process.exit(1);
  },
);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
