// A real redis-server for the tests: the one REDELAY_TEST_REDIS_URL names
// (flushed before each test), or one started here on a free port. Without
// redis-server on PATH the tests fail; they do not skip.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export async function startRedis() {
  if (process.env.REDELAY_TEST_REDIS_URL) {
    return { url: process.env.REDELAY_TEST_REDIS_URL, stop: async () => {} };
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'redelay-node-'));
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const spawned = new Promise((resolve, reject) => {
    proc.once('error', (err) => reject(new Error(`redis-server could not start (scripts/test.sh installs it): ${err.message}`)));
    proc.once('spawn', resolve);
  });
  await spawned;
  const url = `redis://127.0.0.1:${port}/0`;
  const deadline = Date.now() + 10000;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch (err) {
      probe.disconnect();
      if (Date.now() > deadline) throw new Error(`redis-server did not start: ${err.message}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return {
    url,
    stop: async () => {
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
