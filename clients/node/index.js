// redelay for Node.js: a producer for redelay queues
// (github.com/redelay/redelay), following the offer protocol of
// docs/protocol.md with the very scripts the Go producer runs.

import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** The offer protocol this package speaks (docs/protocol.md). */
export const PROTOCOL_VERSION = 1;

const MAX_ID_LEN = 256;
const MAX_HEADERS = 64;
const MAX_HEADER_KEY = 256;
const MAX_PRIORITY = 9;
const RESERVED_PREFIX = 'redelay-';
const DEFAULT_MAX_PAYLOAD = 1 << 20;
const MAX_DUE_US = 2n ** 53n;
/** The longest TTL, in ms: 10 years (365-day years), as the Go library's. */
const MAX_TTL_MS = 10 * 365 * 24 * 3600 * 1000;
const CHUNK = 500;
const LANE_TTL_MS = 60000;
const MAX_NAME_LEN = 200;
const MAX_PREFIX_LEN = 64;

// Statuses of offer.lua, one per item.
const DUPLICATE = 0;
const FULL = 3;

/** Base class of every error this package throws. */
export class RedelayError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = this.constructor.name;
  }
}

/** An argument cannot be offered; nothing was sent to Redis. */
export class InvalidArgumentError extends RedelayError {}

/** An item with this ID is already pending: it was kept, the new one dropped. */
export class DuplicateError extends RedelayError {
  constructor(id) {
    super(`an item with id ${JSON.stringify(id)} is already pending`);
    this.id = id;
  }
}

/** The queue is at its bound (maxSize): nothing was stored. */
export class QueueFullError extends RedelayError {}

/**
 * The offer was sent but no reply came, even after resending it: it may or
 * may not be stored. Offering the same IDs again is safe (a stored one is
 * refused as a duplicate).
 */
export class OfferOutcomeUnknownError extends RedelayError {
  constructor(message, ids, options) {
    super(message, options);
    this.ids = ids;
  }
}

function script(name) {
  const src = readFileSync(new URL(`./lua/${name}`, import.meta.url));
  return { src, sha: createHash('sha1').update(src).digest('hex') };
}

const OFFER = script('offer.lua');
const REMOVE = script('remove.lua');

/** Returns a random 16-character ID (96 bits, URL-safe base64), the shape of the Go library's. */
export function newId() {
  return randomBytes(12).toString('base64url');
}

function utf8Len(what, s) {
  if (typeof s !== 'string') throw new InvalidArgumentError(`${what} ${String(s)}: want a string`);
  if (!s.isWellFormed()) throw new InvalidArgumentError(`${what} ${JSON.stringify(s)} is not UTF-8`);
  return Buffer.byteLength(s, 'utf8');
}

function checkName(what, s, limit) {
  const n = utf8Len(what, s);
  if (n === 0) throw new InvalidArgumentError(`empty ${what}`);
  if (n > limit) throw new InvalidArgumentError(`${what} of ${n} bytes, at most ${limit}`);
  for (const c of s) {
    const code = c.codePointAt(0);
    if (c === '{' || c === '}' || code <= 0x20 || code === 0x7f) {
      throw new InvalidArgumentError(`${what} ${JSON.stringify(s)} contains ${JSON.stringify(c)}`);
    }
  }
}

function checkId(id) {
  const n = utf8Len('id', id);
  if (n === 0) throw new InvalidArgumentError('empty id');
  if (n > MAX_ID_LEN) throw new InvalidArgumentError(`id of ${n} bytes, at most ${MAX_ID_LEN}`);
}

function checkGroup(g) {
  const n = utf8Len('group key', g);
  if (n === 0) throw new InvalidArgumentError('empty group key');
  if (n > MAX_ID_LEN) throw new InvalidArgumentError(`group key of ${n} bytes, at most ${MAX_ID_LEN}`);
}

function checkHeaders(h) {
  if (h == null) return;
  if (typeof h !== 'object') throw new InvalidArgumentError('headers: want an object of strings');
  const entries = Object.entries(h);
  if (entries.length > MAX_HEADERS) throw new InvalidArgumentError(`${entries.length} headers, at most ${MAX_HEADERS}`);
  for (const [k, v] of entries) {
    if (typeof v !== 'string') throw new InvalidArgumentError(`header ${JSON.stringify(k)}: values must be strings`);
    utf8Len(`header ${JSON.stringify(k)}`, v);
    const n = utf8Len('header name', k);
    if (n === 0) throw new InvalidArgumentError('empty header name');
    if (n > MAX_HEADER_KEY) throw new InvalidArgumentError(`header name of ${n} bytes, at most ${MAX_HEADER_KEY}`);
    if (k.toLowerCase().startsWith(RESERVED_PREFIX)) {
      throw new InvalidArgumentError(`header ${JSON.stringify(k)}: names starting with "${RESERVED_PREFIX}" are reserved`);
    }
  }
}

function uvarint(n) {
  const out = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

function str(b) {
  return Buffer.concat([uvarint(b.length), b]);
}

/**
 * Builds the envelope of one item (docs/format.md), with zero times for the
 * offer script to stamp from the server's clock. A TTL is written in ms,
 * 8 bytes big-endian; the script replaces it with the deadline (due time +
 * TTL).
 */
export function envelope(id, payload, headers, priority, group, ttlMs = 0) {
  const ext = [];
  if (priority) ext.push([1, Buffer.from([priority])]);
  if (ttlMs) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(ttlMs));
    ext.push([2, b]);
  }
  if (group) ext.push([3, Buffer.from(group, 'utf8')]);
  const parts = [Buffer.from([ext.length ? 2 : 1]), Buffer.alloc(20), str(Buffer.from(id, 'utf8'))];
  const hs = Object.entries(headers ?? {});
  parts.push(uvarint(hs.length));
  for (const [k, v] of hs) parts.push(str(Buffer.from(k, 'utf8')), str(Buffer.from(v, 'utf8')));
  if (ext.length) {
    parts.push(uvarint(ext.length));
    for (const [tag, v] of ext) parts.push(uvarint(tag), str(v));
  }
  parts.push(payload);
  return Buffer.concat(parts);
}

const TICK = /@([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z$/;

/** Whether id has the shape of a recurring schedule's tick ID (partition 0). */
export function isTickId(id) {
  const m = TICK.exec(id);
  if (!m) return false;
  const [y, mo, d, h, mi, s, ms] = m.slice(1).map(Number);
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d &&
    t.getUTCHours() === h && t.getUTCMinutes() === mi && t.getUTCSeconds() === s && y >= 1;
}

/** The partition that holds id in a queue of n partitions: FNV-1a (32-bit) modulo n. */
export function partitionOf(id, n) {
  if (n <= 1 || isTickId(id)) return 0;
  let h = 0x811c9dc5;
  for (const b of Buffer.from(id, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h % n;
}

function keys(prefix, name, part) {
  const tag = part === 0 ? `{${name}}` : `{${name}{${part}}`;
  const base = `${prefix}:${tag}:`;
  return {
    delayed: base + 'delayed', items: base + 'items', seq: base + 'seq', ready: base + 'ready',
    retry: base + 'retry', prio: base + 'prio', meta: base + 'meta', wake: base + 'wake',
    lane: (l) => base + 'lane:' + l, batch: (b) => base + 'batch:' + b,
  };
}

function micros(delay) {
  if (typeof delay !== 'number' || !Number.isFinite(delay)) {
    throw new InvalidArgumentError(`delay ${String(delay)}: want a finite number of milliseconds`);
  }
  if (delay < 0) throw new InvalidArgumentError(`negative delay ${delay}`);
  const us = BigInt(Math.round(delay * 1000));
  if (us > MAX_DUE_US - BigInt(Date.now()) * 1000n) throw new InvalidArgumentError(`delay ${delay} out of range (due after 2255)`);
  return us;
}

// ttlMillis checks a TTL in ms (1 ms to 10 years; 0 or absent: none) and
// returns it in whole ms, as the Go library's CheckTTL and SetTTL do.
function ttlMillis(ttl) {
  if (ttl == null || ttl === 0) return 0;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl)) {
    throw new InvalidArgumentError(`ttl ${String(ttl)}: want a finite number of milliseconds`);
  }
  if (ttl < 1 || ttl > MAX_TTL_MS) throw new InvalidArgumentError(`ttl ${ttl} out of range (1 ms to 10 years)`);
  return Math.floor(ttl);
}

function base36(n) {
  return n.toString(36);
}

function isReplyError(err) {
  return err != null && err.name === 'ReplyError';
}

/**
 * Offers items to the redelay queue `queue` on `redis` (an ioredis `Redis`
 * or `Cluster`), for the queue's Go consumers.
 */
export class Producer {
  constructor(redis, queue, options = {}) {
    const { prefix = 'redelay', codec = 'json', maxSize = 0, maxPayload = DEFAULT_MAX_PAYLOAD, resends = 3 } = options;
    checkName('queue name', queue, MAX_NAME_LEN);
    checkName('key prefix', prefix, MAX_PREFIX_LEN);
    if (prefix.startsWith(':') || prefix.endsWith(':')) throw new InvalidArgumentError(`key prefix ${JSON.stringify(prefix)} starts or ends with ':'`);
    if (codec !== 'json' && codec !== 'raw') throw new InvalidArgumentError(`codec ${JSON.stringify(codec)}: want 'json' or 'raw'`);
    for (const [k, v] of Object.entries({ maxSize, maxPayload, resends })) {
      if (!Number.isInteger(v) || v < 0) throw new InvalidArgumentError(`${k} ${String(v)}: want an integer, 0 or more`);
    }
    this.redis = redis;
    this.queue = queue;
    this.prefix = prefix;
    this.codec = codec;
    this.maxSize = maxSize;
    this.maxPayload = maxPayload;
    this.resends = resends;
    this._partitions = null;
    this._lanePrefix = randomBytes(8).toString('base64url');
    this._free = [];
    this._lanes = 0;
    this._nonce = 0;
  }

  /**
   * Offers value due after `delay` ms (0: ready now unless earlier items are
   * due) and resolves to its ID: `id` when given, else a new random one.
   * With `ttl` (ms, 1 ms to 10 years), an item still undelivered that long
   * after its due time is never handed out: consumers move it to the dead
   * letters as expired (Go's WithTTL).
   */
  async offer(value, { delay = 0, id, headers, priority = 0, group, ttl } = {}) {
    return (await this.offerMany([{ value, delay, id, headers, priority, group, ttl }]))[0];
  }

  /** Offers value due at `at` (a Date) and resolves to its ID. */
  async offerAt(value, at, { id, headers, priority = 0, group, ttl } = {}) {
    return (await this.offerMany([{ value, at, id, headers, priority, group, ttl }]))[0];
  }

  /**
   * Offers every value with the same delay, headers, priority and TTL and
   * resolves to their new IDs in order, in calls of 500 items (each atomic
   * and idempotent on resend). With `maxSize`, each partition's share is
   * one call that fits as a whole or is refused with QueueFullError.
   */
  async offerBatch(values, { delay = 0, headers, priority = 0, ttl } = {}) {
    return this.offerMany(Array.from(values, (value) => ({ value, delay, headers, priority, ttl })), { batch: true });
  }

  /** Offers each item ({value, delay | at, id, headers, priority, group, ttl}) and resolves to their IDs. */
  async offerMany(items, { batch = false } = {}) {
    const n = await this._partitionCount();
    const prepared = items.map((it) => this._prepare(it, n));
    const byPart = new Map();
    prepared.forEach((p, i) => {
      if (!byPart.has(p.part)) byPart.set(p.part, []);
      byPart.get(p.part).push(i);
    });
    const statuses = new Array(prepared.length);
    const bound = this.maxSize ? Math.floor(this.maxSize / n) : 0;
    for (const [part, idx] of byPart) {
      const whole = batch && bound > 0;
      const chunks = [];
      if (whole) chunks.push(idx);
      else for (let i = 0; i < idx.length; i += CHUNK) chunks.push(idx.slice(i, i + CHUNK));
      for (const chunk of chunks) {
        const got = await this._offerCall(part, bound, chunk.map((i) => prepared[i]), whole);
        chunk.forEach((i, j) => { statuses[i] = got[j]; });
      }
    }
    prepared.forEach((p, i) => {
      if (statuses[i] === DUPLICATE) throw new DuplicateError(p.id);
      if (statuses[i] === FULL) throw new QueueFullError(`queue ${JSON.stringify(this.queue)} is full (maxSize ${this.maxSize})`);
    });
    return prepared.map((p) => p.id);
  }

  /** Cancels the pending item `id`: true when it was pending and is now removed. */
  async remove(id) {
    checkId(id);
    const k = keys(this.prefix, this.queue, partitionOf(id, await this._partitionCount()));
    return (await this._run(REMOVE, [k.delayed, k.items], [id])) === 1;
  }

  _prepare(it, n) {
    let mode, us;
    if (it.at != null && it.delay) throw new InvalidArgumentError('both delay and at given');
    if (it.at != null) {
      if (!(it.at instanceof Date) || Number.isNaN(it.at.getTime())) throw new InvalidArgumentError(`at ${String(it.at)}: want a valid Date`);
      us = BigInt(it.at.getTime()) * 1000n;
      if (us < 0n || us > MAX_DUE_US) throw new InvalidArgumentError(`due time ${it.at.toISOString()} out of range (1970 to 2255)`);
      mode = 'a';
    } else {
      us = micros(it.delay ?? 0);
      mode = 'd';
    }
    checkHeaders(it.headers);
    const priority = it.priority ?? 0;
    if (!Number.isInteger(priority) || priority < 0 || priority > MAX_PRIORITY) {
      throw new InvalidArgumentError(`priority ${String(priority)}: want 0 to ${MAX_PRIORITY}`);
    }
    const ttlMs = ttlMillis(it.ttl);
    if (it.group != null) checkGroup(it.group);
    let id;
    if (it.id != null) {
      checkId(it.id);
      id = it.id;
    } else {
      mode = mode.toUpperCase(); // a generated ID: no pending item holds it
      id = newId();
      if (it.group && n > 1) {
        const want = partitionOf(it.group, n);
        while (partitionOf(id, n) !== want) id = newId();
      }
    }
    const part = it.group ? partitionOf(it.group, n) : partitionOf(id, n);
    const payload = this._encode(it.value);
    let size = payload.length;
    for (const [k, v] of Object.entries(it.headers ?? {})) size += Buffer.byteLength(k) + Buffer.byteLength(v);
    if (this.maxPayload && size > this.maxPayload) {
      throw new InvalidArgumentError(`payload too large: ${size} bytes encoded, limit ${this.maxPayload}`);
    }
    return { part, id, env: envelope(id, payload, it.headers, priority, it.group, ttlMs), mode, us };
  }

  _encode(value) {
    if (this.codec === 'raw') {
      if (!(value instanceof Uint8Array)) throw new InvalidArgumentError('raw codec: want a Buffer or Uint8Array');
      return Buffer.from(value);
    }
    let s;
    try {
      s = JSON.stringify(value);
    } catch (err) {
      throw new InvalidArgumentError(`json codec: ${err.message}`, { cause: err });
    }
    if (s === undefined) throw new InvalidArgumentError(`json codec: ${typeof value} cannot be encoded`);
    return Buffer.from(s, 'utf8');
  }

  async _partitionCount() {
    if (this._partitions == null) {
      const v = await this.redis.hget(keys(this.prefix, this.queue, 0).meta, 'partitions');
      const n = v == null ? 1 : Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 256) {
        throw new RedelayError(`queue ${JSON.stringify(this.queue)}: partitions field ${JSON.stringify(v)}, want 1 to 256`);
      }
      this._partitions = n;
    }
    return this._partitions;
  }

  async _offerCall(part, bound, items, whole) {
    const k = keys(this.prefix, this.queue, part);
    const lane = this._free.pop() ?? `${this._lanePrefix}.${this._lanes++}`;
    try {
      const nonce = base36(++this._nonce);
      const passKey = whole ? k.batch(newId()) : k.meta;
      const ks = [k.delayed, k.items, k.seq, k.ready, k.retry, k.lane(lane), k.prio, passKey];
      const args = [k.wake, nonce, LANE_TTL_MS, bound, whole ? items.length : 0, 0];
      for (const it of items) args.push(it.id, it.env, it.mode, it.us.toString());
      const ids = items.map((it) => it.id);
      let last;
      for (let attempt = 0; attempt <= this.resends; attempt++) {
        let got;
        try {
          got = await this._run(OFFER, ks, args);
        } catch (err) {
          if (!isReplyError(err)) {
            last = err;
            continue;
          }
          if (String(err.message).startsWith('STALE')) throw new OfferOutcomeUnknownError(err.message, ids, { cause: err });
          throw new RedelayError(`offer to ${JSON.stringify(this.queue)}: ${err.message}`, { cause: err });
        }
        if (!Array.isArray(got) || got.length !== items.length) {
          throw new RedelayError(`offer to ${JSON.stringify(this.queue)}: unexpected reply ${JSON.stringify(got)}`);
        }
        return got.map(Number);
      }
      throw new OfferOutcomeUnknownError(
        `offer to ${JSON.stringify(this.queue)}: no reply after ${this.resends + 1} sends: ${last?.message}`, ids, { cause: last });
    } finally {
      this._free.push(lane);
    }
  }

  async _run(s, ks, args) {
    try {
      return await this.redis.evalsha(s.sha, ks.length, ...ks, ...args);
    } catch (err) {
      if (isReplyError(err) && String(err.message).startsWith('NOSCRIPT')) {
        return this.redis.eval(s.src, ks.length, ...ks, ...args);
      }
      throw err;
    }
  }
}
