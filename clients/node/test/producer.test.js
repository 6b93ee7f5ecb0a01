// Tests of the producer against a real Redis: what it stores is what the
// Go library's consumers read (docs/format.md, docs/keys.md).

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import {
  DuplicateError, InvalidArgumentError, OfferOutcomeUnknownError, Producer, QueueFullError,
  isTickId, partitionOf,
} from '../index.js';
import { lostReply } from './lossy.js';
import { startRedis } from './server.js';

const K = { delayed: 'redelay:{orders}:delayed', items: 'redelay:{orders}:items', ready: 'redelay:{orders}:ready', meta: 'redelay:{orders}:meta' };

function readUvarint(b, i) {
  let n = 0;
  let mul = 1;
  for (;;) {
    const c = b[i++];
    n += (c & 0x7f) * mul;
    if (c < 0x80) return [n, i];
    mul *= 128;
  }
}

function readString(b, i) {
  const [n, j] = readUvarint(b, i);
  return [b.subarray(j, j + n), j + n];
}

// Reads an envelope as the Go library does.
function parse(env) {
  const version = env[0];
  const due = Number(env.readBigUInt64BE(9));
  let [id, i] = readString(env, 21);
  let nh;
  [nh, i] = readUvarint(env, i);
  const headers = {};
  for (let h = 0; h < nh; h++) {
    let k, v;
    [k, i] = readString(env, i);
    [v, i] = readString(env, i);
    headers[k.toString()] = v.toString();
  }
  const ext = {};
  if (version === 2) {
    let ne;
    [ne, i] = readUvarint(env, i);
    for (let e = 0; e < ne; e++) {
      let tag, v;
      [tag, i] = readUvarint(env, i);
      [v, i] = readString(env, i);
      ext[tag] = [...v];
    }
  }
  return { version, due, id: id.toString(), headers, ext, payload: env.subarray(i) };
}

describe('Producer', () => {
  let server;
  let r;
  before(async () => {
    server = await startRedis();
    r = new Redis(server.url);
  });
  after(async () => {
    r.disconnect();
    await server.stop();
  });
  beforeEach(async () => {
    await r.flushdb();
  });

  async function stored(id, items = K.items) {
    const v = await r.hgetBuffer(items, id);
    assert.ok(v, `item ${id} is not pending`);
    return parse(v.subarray(6));
  }

  test('offer stores an envelope the Go consumer reads', async () => {
    const p = new Producer(r, 'orders');
    const before = Date.now();
    const id = await p.offer({ order: 7, note: 'ünïcode' }, { delay: 30 * 60000, id: 'order-7', headers: { tenant: 'b' } });
    assert.equal(id, 'order-7');
    const e = await stored(id);
    assert.equal(e.version, 1);
    assert.equal(e.id, 'order-7');
    assert.deepEqual(e.headers, { tenant: 'b' });
    assert.deepEqual(JSON.parse(e.payload.toString()), { order: 7, note: 'ünïcode' });
    assert.ok(e.due >= before + 30 * 60000 - 1000 && e.due <= Date.now() + 30 * 60000 + 1000);
  });

  test('generated IDs are new and Go-shaped', async () => {
    const p = new Producer(r, 'orders');
    const ids = new Set();
    for (let i = 0; i < 50; i++) ids.add(await p.offer(i, { delay: 60000 }));
    assert.equal(ids.size, 50);
    for (const id of ids) assert.equal(id.length, 16);
    assert.equal(await r.zcard(K.delayed), 50);
  });

  test('a duplicate ID is refused and the first kept', async () => {
    const p = new Producer(r, 'orders');
    await p.offer('first', { delay: 60000, id: 'x' });
    await assert.rejects(p.offer('second', { delay: 1, id: 'x' }), (err) => err instanceof DuplicateError && err.id === 'x');
    assert.equal(JSON.parse((await stored('x')).payload.toString()), 'first');
  });

  test('due now goes to the ready list', async () => {
    const p = new Producer(r, 'orders');
    await p.offer({ n: 1 });
    assert.equal(await r.llen(K.ready), 1);
  });

  test('offerAt', async () => {
    const p = new Producer(r, 'orders');
    const at = new Date(Date.now() + 2 * 3600000);
    const id = await p.offerAt('v', at, { id: 'at-1' });
    assert.equal((await stored(id)).due, at.getTime());
  });

  test('priority and group are extensions', async () => {
    const p = new Producer(r, 'orders');
    const id = await p.offer('v', { delay: 60000, priority: 7, group: 'tenant-a' });
    const e = await stored(id);
    assert.equal(e.version, 2);
    assert.deepEqual(e.ext, { 1: [7], 3: [...Buffer.from('tenant-a')] });
  });

  test('a TTL is stamped as a deadline', async () => {
    // Written in ms; the script replaces it with due time + TTL (tag 2).
    const p = new Producer(r, 'orders');
    const id = await p.offer('v', { delay: 60000, ttl: 5 * 60000, id: 't-1' });
    const e = await stored(id);
    assert.equal(e.version, 2);
    assert.equal(Buffer.from(e.ext[2]).readBigUInt64BE(), BigInt(e.due + 5 * 60000));
    await p.offer('w', { delay: 60000, ttl: 1.9, id: 't-2' }); // whole ms
    const e2 = await stored('t-2');
    assert.equal(Buffer.from(e2.ext[2]).readBigUInt64BE(), BigInt(e2.due + 1));
    await p.offer('x', { delay: 60000, ttl: 0, id: 't-3' }); // 0: none
    assert.deepEqual((await stored('t-3')).ext, {});
  });

  test('a resent offer is stored once', async () => {
    // The first call runs on the server but its reply is lost.
    const lossy = lostReply(r);
    const p = new Producer(lossy.client, 'orders');
    assert.equal(await p.offer('d', { delay: 60000, id: 'd' }), 'd');
    assert.ok(lossy.state.lost);
    assert.equal(await r.zcard(K.delayed), 1);
  });

  test('no reply at all is an unknown outcome', async () => {
    const down = { hget: async () => null, evalsha: async () => { throw new Error('connect ECONNREFUSED'); } };
    const p = new Producer(down, 'orders', { resends: 2 });
    await assert.rejects(p.offer('v', { id: 'u' }), (err) => err instanceof OfferOutcomeUnknownError && err.ids[0] === 'u');
  });

  test('queue full, and a bounded batch fits as a whole', async () => {
    const p = new Producer(r, 'orders', { maxSize: 5 });
    await p.offerBatch([1, 2, 3], { delay: 60000 });
    await assert.rejects(p.offerBatch([4, 5, 6], { delay: 60000 }), QueueFullError);
    assert.equal(await r.zcard(K.delayed), 3);
    await p.offer(4, { delay: 60000 });
    await p.offer(5, { delay: 60000 });
    await assert.rejects(p.offer(6, { delay: 60000 }), QueueFullError);
    assert.deepEqual(await r.keys('redelay:{orders}:batch:*'), []);
  });

  test('offerBatch in calls of 500', async () => {
    const p = new Producer(r, 'orders');
    const ids = await p.offerBatch(Array.from({ length: 1200 }, (_, i) => i), { delay: 60000 });
    assert.equal(new Set(ids).size, 1200);
    assert.equal(await r.zcard(K.delayed), 1200);
    assert.equal(JSON.parse((await stored(ids[2])).payload.toString()), 2);
  });

  test('remove', async () => {
    const p = new Producer(r, 'orders');
    await p.offer('v', { delay: 60000, id: 'gone' });
    assert.equal(await p.remove('gone'), true);
    assert.equal(await p.remove('gone'), false);
  });

  test('scripts reload after a flush', async () => {
    const p = new Producer(r, 'orders');
    await p.offer(1, { delay: 60000 });
    await r.script('FLUSH');
    await p.offer(2, { delay: 60000 });
    assert.equal(await r.zcard(K.delayed), 2);
  });

  test('raw codec', async () => {
    const p = new Producer(r, 'orders', { codec: 'raw' });
    const id = await p.offer(Buffer.from([0, 255, 1]), { delay: 60000 });
    assert.deepEqual([...(await stored(id)).payload], [0, 255, 1]);
    await assert.rejects(p.offer('not bytes'), InvalidArgumentError);
  });

  test('partitions follow the recorded count', async () => {
    await r.hset(K.meta, 'partitions', 4);
    const p = new Producer(r, 'orders');
    for (let i = 0; i < 20; i++) {
      const id = await p.offer(i, { delay: 60000, id: `id-${i}` });
      const part = partitionOf(id, 4);
      const items = part === 0 ? K.items : `redelay:{orders{${part}}:items`;
      assert.equal(await r.hexists(items, id), 1);
    }
    const gid = await p.offer('g', { delay: 60000, group: 'tenant-a' });
    assert.equal(partitionOf(gid, 4), partitionOf('tenant-a', 4));
    assert.equal(await p.remove('id-3'), true);
  });

  test('partitionOf matches Go', () => {
    assert.equal(partitionOf('', 7), 0x811c9dc5 % 7);
    assert.equal(partitionOf('a', 1000), 0xe40c292c % 1000);
    assert.equal(partitionOf('nightly@2026-12-04T03:00:00.000Z', 8), 0);
    assert.ok(isTickId('@2026-12-04T03:00:00.000Z'));
    assert.ok(!isTickId('x@2026-13-04T03:00:00.000Z'));
    assert.ok(!isTickId('x@2026-02-30T03:00:00.000Z'));
  });

  const bad = [
    [{ delay: -1 }, /negative delay/],
    [{ delay: NaN }, /finite/],
    [{ delay: '5' }, /finite/],
    [{ priority: 10 }, /priority/],
    [{ priority: 1.5 }, /priority/],
    [{ id: '' }, /empty id/],
    [{ id: 'x'.repeat(257) }, /at most 256/],
    [{ id: '\ud800' }, /not UTF-8/],
    [{ headers: { 'Redelay-Error': 'x' } }, /reserved/],
    [{ headers: { '': 'x' } }, /empty header/],
    [{ headers: { k: 1 } }, /strings/],
    [{ group: '' }, /empty group/],
    [{ delay: 300 * 365 * 86400000 }, /out of range/],
    [{ ttl: 0.5 }, /ttl .* out of range/],
    [{ ttl: -1 }, /ttl .* out of range/],
    [{ ttl: 3651 * 86400000 }, /ttl .* out of range/],
    [{ ttl: '1h' }, /ttl .*finite/],
    [{ ttl: Infinity }, /ttl .*finite/],
  ];
  for (const [opts, message] of bad) {
    test(`bad input refused before sending: ${JSON.stringify(opts)}`, async () => {
      const p = new Producer(r, 'orders');
      await assert.rejects(p.offer('v', opts), (err) => err instanceof InvalidArgumentError && message.test(err.message));
      assert.equal(await r.dbsize(), 0);
    });
  }

  test('bad queue names', () => {
    for (const name of ['', 'a{b', 'a}b', 'a b', 'a\x00', 'x'.repeat(201)]) {
      assert.throws(() => new Producer(r, name), InvalidArgumentError);
    }
  });

  test('values JSON cannot encode', async () => {
    const p = new Producer(r, 'orders');
    const cyclic = {};
    cyclic.self = cyclic;
    await assert.rejects(p.offer(cyclic), /json codec/);
    await assert.rejects(p.offer(undefined), /json codec/);
    await assert.rejects(p.offer(10n), /json codec/);
  });

  test('payload limit', async () => {
    const p = new Producer(r, 'orders', { codec: 'raw', maxPayload: 10 });
    await assert.rejects(p.offer(Buffer.alloc(11)), /too large/);
  });
});
