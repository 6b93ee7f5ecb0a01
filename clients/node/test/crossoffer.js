// Offers a fixed set of items to a queue, for the Go test that consumes
// them (internal/systemtest/polyglot_test.go). Prints one JSON object:
// what was offered and when, for the consumer to check.
//
//   node crossoffer.js ADDR QUEUE [--cluster]

import { Cluster, Redis } from 'ioredis';
import { DuplicateError, Producer } from '../index.js';
import { lostReply } from './lossy.js';

const [addr, queue, ...flags] = process.argv.slice(2);
const i = addr.lastIndexOf(':');
const host = addr.slice(0, i);
const port = Number(addr.slice(i + 1));
const client = flags.includes('--cluster') ? new Cluster([{ host, port }]) : new Redis({ host, port });

try {
  const p = new Producer(client, queue);
  const startMs = Date.now();
  // Ready now, with a TTL of 1 ms: expired before the consumer, which
  // starts after this script ends, can take it.
  await p.offer({ n: 100, text: 'expires' }, { id: 'js-expired', ttl: 1 });
  const items = [];
  // Offered in one order, due in another.
  const delays = [1200, 300, 900, 600, 1500];
  for (let n = 0; n < delays.length; n++) {
    const id = `js-${n}`;
    const value = { n, text: `from node ✓ ${n}` };
    const headers = { lang: 'node', i: String(n) };
    await p.offer(value, { delay: delays[n], id, headers, ttl: 60000 });
    items.push({ id, value, headers, delay_ms: delays[n] });
  }
  let duplicateRefused = false;
  try {
    await p.offer({ n: 99, text: 'a second js-2' }, { delay: 100, id: 'js-2' });
  } catch (err) {
    duplicateRefused = err instanceof DuplicateError;
  }
  const lossy = lostReply(client);
  const value = { n: 5, text: 'resent' };
  await new Producer(lossy.client, queue).offer(value, { delay: 450, id: 'js-resent', headers: { lang: 'node' } });
  items.push({ id: 'js-resent', value, headers: { lang: 'node' }, delay_ms: 450 });
  const ids = await p.offerBatch([0, 1, 2].map((k) => ({ n: 6 + k, text: 'batch' })), { delay: 750, headers: { lang: 'node' } });
  ids.forEach((id, k) => items.push({ id, value: { n: 6 + k, text: 'batch' }, headers: { lang: 'node' }, delay_ms: 750 }));
  process.stdout.write(JSON.stringify({ start_ms: startMs, items, expired: ['js-expired'], duplicate_refused: duplicateRefused, reply_lost: lossy.state.lost }) + '\n');
} finally {
  client.disconnect();
}
