// BullMQ side of the "bullmq" benchmark contestant (bench/contestants/bullmq.go).
//
// The Go harness starts `node worker.mjs` with REDIS_HOST, REDIS_PORT, QUEUE
// and PADDING in the environment and speaks a line protocol over
// stdin/stdout. Each job's data is {id}, or {id, pad} with pad a string of
// PADDING bytes when PADDING is over 0.
//
// Requests (stdin), each tagged with a sequence number chosen by Go:
//   <seq> offer <id> <dueUnixMs>           queue.add, delay = max(0, due - now),
//                                          jobId bench-<id>
//   <seq> offerbatch <dueUnixMs> <id,id,…> queue.addBulk, same delay for all
//   <seq> cancel <id>                      queue.getJob(id) then job.remove()
//   <seq> consume <concurrency>            start a Worker
//   <seq> close                            close worker and queue, then exit
// Responses (stdout):
//   <seq> ok
//   <seq> err <message>
// Deliveries (stdout), written by the processor as soon as it has the job:
//   arrived <id>
//
// Requests run concurrently (as many in flight as Go sends), like adds from a
// busy Node.js producer sharing one connection. When stdin ends (the Go
// process went away) everything is closed and the process exits.
import { createInterface } from 'node:readline';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

// BullMQ 6 takes ioredis as an optional peer dependency and, in native ESM,
// an already-constructed client: one for the queue and one for the worker
// (maxRetriesPerRequest null, as BullMQ requires for workers).
const redisOptions = {
  host: process.env.REDIS_HOST || '127.0.0.1',
  port: Number(process.env.REDIS_PORT || 6379),
  maxRetriesPerRequest: null,
};
const queueName = process.env.QUEUE || 'bench';
// The same padding as padding() in bench/contestants/contestant.go.
const paddingBytes = Number(process.env.PADDING || 0);
const pad = paddingBytes > 0 ? '0123456789abcdef'.repeat(Math.ceil(paddingBytes / 16) + 1).slice(0, paddingBytes) : '';

const queueConnection = new Redis(redisOptions);
const queue = new Queue(queueName, { connection: queueConnection });
queue.on('error', (err) => console.error(`queue error: ${err.message}`));
let worker = null;
let workerConnection = null;
let closing = null;

function write(line) {
  process.stdout.write(line + '\n');
}

function delayUntil(dueMs) {
  return Math.max(0, dueMs - Date.now());
}

// BullMQ reserves integer job ids for its own counter, so custom ids get a
// prefix.
function jobId(id) {
  return `bench-${id}`;
}

function jobData(id) {
  return pad ? { id, pad } : { id };
}

function parseInteger(s, what) {
  if (!/^-?\d+$/.test(s ?? '')) throw new Error(`bad ${what} ${JSON.stringify(s)}`);
  return Number(s);
}

async function offer(idArg, dueArg) {
  const id = parseInteger(idArg, 'id');
  const due = parseInteger(dueArg, 'due');
  await queue.add('bench', jobData(id), { delay: delayUntil(due), jobId: jobId(id) });
}

async function offerBatch(dueArg, idsArg) {
  const due = parseInteger(dueArg, 'due');
  const ids = (idsArg ?? '').split(',').filter((s) => s !== '').map((s) => parseInteger(s, 'id'));
  const delay = delayUntil(due);
  await queue.addBulk(ids.map((id) => ({ name: 'bench', data: jobData(id), opts: { delay, jobId: jobId(id) } })));
}

async function cancel(idArg) {
  const id = parseInteger(idArg, 'id');
  const job = await queue.getJob(jobId(id));
  if (!job) throw new Error(`job ${id} not found`);
  await job.remove();
}

async function consume(concurrencyArg) {
  if (worker) throw new Error('already consuming');
  const concurrency = parseInteger(concurrencyArg, 'concurrency');
  workerConnection = new Redis(redisOptions);
  worker = new Worker(
    queueName,
    async (job) => {
      write(`arrived ${job.data.id}`);
    },
    { connection: workerConnection, concurrency },
  );
  worker.on('error', (err) => console.error(`worker error: ${err.message}`));
  await worker.waitUntilReady();
}

function close() {
  closing ??= (async () => {
    const results = await Promise.allSettled([worker?.close(), queue.close()]);
    // Connections passed in as instances are the caller's to close.
    results.push(...(await Promise.allSettled([workerConnection?.quit(), queueConnection.quit()])));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  })();
  return closing;
}

async function handle(line) {
  const [seq, cmd, ...args] = line.trim().split(/\s+/);
  if (!seq) return;
  try {
    switch (cmd) {
      case 'offer': await offer(args[0], args[1]); break;
      case 'offerbatch': await offerBatch(args[0], args[1]); break;
      case 'cancel': await cancel(args[0]); break;
      case 'consume': await consume(args[0]); break;
      case 'close': await close(); break;
      default: throw new Error(`unknown command ${JSON.stringify(cmd)}`);
    }
    write(`${seq} ok`);
  } catch (err) {
    write(`${seq} err ${String(err?.message ?? err).replace(/\s+/g, ' ')}`);
  }
  if (cmd === 'close') process.exit(0);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => { handle(line); });
lines.on('close', () => {
  close().finally(() => process.exit(0));
});
