// bench:noisy's `refused` phase (issue 53): a gateway at the default upload quotas and the
// manifests' memory budget, and one client sending 10 MB bodies to an operation that takes 1 MiB
// on BENCH_REFUSED_CONNECTIONS connections at once (abuser mode `refused`), each body written whole
// before the next, so the gateway discards from all of them at once (its lingering close, waiting
// for the client's quota where it has no room). Shows the gateway's peak RSS against its budget,
// the most connections lingering at once (discarding / waiting for room, from /metrics), the
// client's answers (413 read, or a reset), and how another tenant fared.
import type { AbuserParams, AbuserResult } from './abuser.js';
import { peaksLine, watchPeaks } from './peaks.js';
import { benchGatewayNodeFlags, runForResult, spawnTsx, type Child } from './processes.js';
import { round } from './stats.js';
import { sleep, victimFigures, victimLines, type VictimPhaseDeps } from './victim-phase.js';

/** Upload quotas as given in childEnv: the defaults. */
export type RefusedPhaseDeps = VictimPhaseDeps & { connections: number };

/** The most lingering connections (by state) seen in the gateway's /metrics, sampled every 200 ms. */
function watchLingering(base: string) {
  const most = { discarding: 0, waiting_for_room: 0, total: 0 };
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      try {
        const text = await (await fetch(new URL('/metrics', base))).text();
        const value = (state: string) =>
          Number(text.match(new RegExp(`^http_lingering_connections\\{state="${state}"\\} (\\d+)`, 'm'))?.[1] ?? 0);
        const discarding = value('discarding');
        const waiting = value('waiting_for_room');
        most.discarding = Math.max(most.discarding, discarding);
        most.waiting_for_room = Math.max(most.waiting_for_room, waiting);
        most.total = Math.max(most.total, discarding + waiting);
      } catch {
        // a scrape that failed counts nothing
      }
      await sleep(200);
    }
  })();
  return async () => {
    stopped = true;
    await sampling;
    return most;
  };
}

export async function runRefusedPhase(d: RefusedPhaseDeps) {
  const budgetBytes = Number(d.childEnv.GATEWAY_MEMORY_BUDGET_BYTES);
  let gateway: Child | null = null;
  try {
    gateway = spawnTsx('src/gateway/server.ts', { ...d.childEnv, HOST: '127.0.0.1', PORT: '0' }, 'refused gateway', [
      ...benchGatewayNodeFlags(),
    ]);
    const base = (await gateway.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
    await d.measure(base, d.victimKey, 3); // warm-up
    d.log('refused: the victim alone on this gateway');
    const quiet = await d.measure(base, d.victimKey, d.phaseSeconds);
    const params: AbuserParams = {
      url: base,
      apiKey: d.abuserKey,
      seconds: d.phaseSeconds + 8,
      floods: d.connections,
      trickles: 0,
      mode: 'refused',
    };
    d.log(
      `refused: ${d.connections} connections of one client sending 10 MB bodies refused 413; budget ${budgetBytes} bytes`,
    );
    const peaks = watchPeaks({ gateway: gateway.pid });
    const lingering = watchLingering(base);
    const abuser = runForResult<AbuserResult>(
      'bench/lib/abuser.ts',
      { ...d.childEnv, BENCH_ABUSER_PARAMS: JSON.stringify(params) },
      'abuser',
      (d.phaseSeconds + 120) * 1000,
    );
    await sleep(4000); // the abuser starts and its connections get going
    const abused = await d.measure(base, d.victimKey, d.phaseSeconds);
    const abuserResult = await abuser;
    const mostLingering = await lingering();
    const peakRss = peaks.stop();
    const budgetMiB = round(budgetBytes / 1048576, 0);
    const result = {
      budgetMiB,
      connections: d.connections,
      peakRss,
      gatewayUnderBudget: peakRss.gateway!.peakRssMiB < budgetMiB,
      mostLingering,
      ...victimFigures(d, quiet, abused),
      abuser: abuserResult,
    };
    const lines = [
      '',
      `refused (issue 53): gateway budget ${budgetMiB} MiB, default upload quotas; one client, ${d.connections} ` +
        'connections sending 10 MB bodies (413) one after another each',
      `peak RSS: ${peaksLine(peakRss)}; gateway ${result.gatewayUnderBudget ? 'UNDER' : 'OVER'} its budget; ` +
        `most lingering at once: ${mostLingering.total} (discarding ${mostLingering.discarding}, ` +
        `waiting for room ${mostLingering.waiting_for_room})`,
      ...victimLines(result),
      `abuser: ${abuserResult.requests} requests ${JSON.stringify(abuserResult.statuses)}, ` +
        `${round(abuserResult.bytesSent / 1048576, 0)} MiB of bodies written whole (into the kernel's buffers)`,
    ];
    return { result, lines };
  } finally {
    await gateway?.stop();
  }
}
