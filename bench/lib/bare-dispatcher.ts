// The least a dispatcher must do for one delivery, as a process of its own for bench:webhooks: the
// machine's share of a healthy delivery's latency, measured beside the dispatchers' in each phase.
// Woken by a NOTIFY on `bench_bare_probe` (the payload a row id of the bench's table of the same
// name), it claims the row in a transaction (BEGIN, UPDATE … RETURNING, COMMIT: a claim's round
// trips, none of its logic), signs the body (signing.ts) and POSTs it with the dispatcher's own
// keep-alive POST (post.ts) to BENCH_BARE_TARGET, webhook-id `bare-<id>`. No slots, no fairness, no
// outcome recorded, no noise of its own to send: in a noisy phase, what it loses against quiet is
// what the noise costs the machine (CPU, PostgreSQL), not what it costs a dispatcher's design.
// Prints `bare-dispatcher: listening` once its LISTEN is in place.
import pg from 'pg';
import { signWebhook } from '../../src/shared/webhooks/signing.js';
import { createWebhookAgents, postWebhook } from '../../src/workers/webhooks/post.js';

const databaseUrl = process.env.DATABASE_URL!;
const target = process.env.BENCH_BARE_TARGET!;
const secret = process.env.BENCH_BARE_SECRET!;

const listener = new pg.Client({ connectionString: databaseUrl, application_name: 'bench-bare-dispatcher' });
const pool = new pg.Pool({ connectionString: databaseUrl, max: 4, application_name: 'bench-bare-dispatcher' });
const agents = createWebhookAgents({ allowPrivate: true });

async function deliver(id: string) {
  const client = await pool.connect();
  let body: string | undefined;
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ body: string }>(
      'UPDATE bench_bare_probe SET claimed_at = now() WHERE id = $1 AND claimed_at IS NULL RETURNING body',
      [id],
    );
    await client.query('COMMIT');
    body = rows[0]?.body;
  } finally {
    client.release();
  }
  if (body === undefined) return;
  const headers = signWebhook(`bare-${id}`, new Date(), body, [secret]);
  await postWebhook(target, headers, body, { timeoutMs: 10_000, allowPrivate: true, agents });
}

listener.on('notification', (n) => {
  if (n.payload) deliver(n.payload).catch((err: unknown) => process.stderr.write(`bare-dispatcher: ${String(err)}\n`));
});
await listener.connect();
await listener.query('LISTEN bench_bare_probe');
process.stdout.write('bare-dispatcher: listening\n');

const stop = () => {
  agents.destroy();
  void Promise.allSettled([listener.end(), pool.end()]).then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
