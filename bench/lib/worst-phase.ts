// bench:noisy's `worst` phase (issue 31): the worst one client may send, against a gateway whose
// memory budget is the manifests' limit, with every deployment's worker runner beside it. Shows
// each process's peak RSS against the budget, that none died, and how the other tenant fared.
import { loadConfig } from '../../src/shared/config.js';
import { makeTargets } from '../../test/support/targets.js';
import type { AbuserParams, AbuserResult } from './abuser.js';
import { peaksLine, watchPeaks } from './peaks.js';
import { benchGatewayNodeFlags, runForResult, spawnTsx, type Child } from './processes.js';
import { round } from './stats.js';
import { sleep, victimFigures, victimLines, type VictimPhaseDeps } from './victim-phase.js';

export type WorstPhaseDeps = VictimPhaseDeps & {
  floods: number;
  trickles: number;
  /** Connections asking for drafts (default: twice ROUTE_SUGGESTION_MAX_IN_FLIGHT). */
  draftConnections?: number;
};

/** One runner per deployment of deploy/k8s/workers.yaml (each with its own memory limit there). */
const workerDeployments = ['inbound', 'inbound-express', 'jobs', 'materials', 'appointments', 'webhooks'];
/** The largest draft a route suggestion computes (src/routing/problem.ts maxTargets). */
const draftTargets = 5000;

/** Pushes the draft's import job with the abuser's key and waits for the workers to apply it. */
async function draftJob(base: string, apiKey: string): Promise<number> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const targets = makeTargets(draftTargets, 'draft').map((t) => ({ ...t, timeWindows: [] }));
  const res = await fetch(new URL('/api/v1/inbound/targets/batch', base), {
    method: 'POST',
    headers,
    body: JSON.stringify({ sourceSystem: 'draft', targets }),
  });
  if (res.status !== 200) throw new Error(`draft job: ${res.status} ${await res.text()}`);
  const id = ((await res.json()) as { importJobId: number }).importJobId;
  for (const until = Date.now() + 300_000; Date.now() < until; await sleep(500)) {
    const job = await fetch(new URL(`/api/v1/import-jobs/${id}`, base), { headers });
    if (((await job.json()) as { status: string }).status === 'Completed') return id;
  }
  throw new Error(`draft job ${id} was not applied within 300 s`);
}

export async function runWorstPhase(d: WorstPhaseDeps) {
  const config = loadConfig(d.childEnv);
  const budgetBytes = Number(d.childEnv.GATEWAY_MEMORY_BUDGET_BYTES);
  const huge = String(1024 * 1024 * 1024);
  // Quotas so large that they shield nothing: the memory budget alone must hold.
  const env = {
    ...d.childEnv,
    UPLOAD_BYTES_PER_SECOND: huge,
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: huge,
  };
  const processes: Record<string, Child> = {};
  try {
    processes.gateway = spawnTsx('src/gateway/server.ts', { ...env, HOST: '127.0.0.1', PORT: '0' }, 'worst gateway', [
      ...benchGatewayNodeFlags(),
    ]);
    const base = (await processes.gateway.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
    for (const kinds of workerDeployments) {
      const runnerEnv = { ...env, WORKERS: kinds, WORKER_HTTP_HOST: '127.0.0.1', WORKER_HTTP_PORT: '0' };
      processes[`workers-${kinds}`] = spawnTsx('src/workers/runner.ts', runnerEnv, `workers ${kinds}`, [
        ...(process.env.BENCH_WORKER_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? []),
      ]);
    }
    for (const [name, c] of Object.entries(processes)) if (name !== 'gateway') await c.waitFor(/workers: running/);
    d.log(`worst: a ${draftTargets}-target import job for the drafts`);
    const routeJobId = await draftJob(base, d.abuserKey);
    await d.measure(base, d.victimKey, 3); // warm-up
    d.log('worst: the victim alone on this gateway');
    const quiet = await d.measure(base, d.victimKey, d.phaseSeconds);

    const floods = Math.max(d.floods, config.inbound.maxInFlight);
    const params: AbuserParams = {
      url: base,
      apiKey: d.abuserKey,
      seconds: d.phaseSeconds + 8,
      floods,
      trickles: d.trickles,
      mode: 'worst',
      routeJobId,
      routeConnections: d.draftConnections ?? 2 * config.routeSuggestions.maxInFlight,
    };
    d.log(
      `worst: ${floods} floods, ${d.trickles} trickles, ${params.routeConnections} drafts; budget ${budgetBytes} bytes`,
    );
    const peaks = watchPeaks(Object.fromEntries(Object.entries(processes).map(([n, c]) => [n, c.pid])));
    const abuser = runForResult<AbuserResult>(
      'bench/lib/abuser.ts',
      { ...d.childEnv, BENCH_ABUSER_PARAMS: JSON.stringify(params) },
      'abuser',
      (d.phaseSeconds + 120) * 1000,
    );
    await sleep(6000); // the abuser builds its bodies and gets going
    const abused = await d.measure(base, d.victimKey, d.phaseSeconds);
    const abuserResult = await abuser;
    const peakRss = peaks.stop();
    const budgetMiB = round(budgetBytes / 1048576, 0);
    const died = Object.entries(peakRss)
      .filter(([, p]) => !p.alive)
      .map(([n]) => n);
    const result = {
      budgetMiB,
      floods,
      peakRss,
      gatewayUnderBudget: peakRss.gateway!.peakRssMiB < budgetMiB,
      died,
      ...victimFigures(d, quiet, abused),
      abuser: abuserResult,
    };
    const lines = [
      '',
      `worst (issue 31): gateway budget ${budgetMiB} MiB, upload quotas off; abuser: ${floods} floods of its ` +
        `largest batches, deep/wide bodies, ${d.trickles} trickles, ${params.routeConnections} drafts; all again at once`,
      `peak RSS: ${peaksLine(peakRss)}; gateway ${result.gatewayUnderBudget ? 'UNDER' : 'OVER'} its budget; ` +
        `died: ${died.length ? died.join(', ') : 'none'}`,
      ...victimLines(result),
      `abuser: ${abuserResult.requests} requests ${JSON.stringify(abuserResult.statuses)}, ` +
        `${round(abuserResult.bytesAccepted / 1048576, 0)} MiB accepted`,
    ];
    return { result, lines };
  } finally {
    await Promise.all(Object.values(processes).map((c) => c.stop()));
  }
}
