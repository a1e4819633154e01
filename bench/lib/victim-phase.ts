// What bench:noisy's gateway phases (worst-phase.ts, refused-phase.ts) share: the other tenant
// (the victim) measured alone and then beside one abusive client, on a gateway of the phase's own.

type Sample = { ms: number; status: number };
export type VictimPhase = { livez: Sample[]; prober: Sample[]; read: Sample[]; push: Sample[] };
type Summary = { count: number; statuses: Record<string, number>; ms: { p50: number; p99: number } };

/** What a phase is handed by bench/noisy-neighbour.ts. */
export type VictimPhaseDeps = {
  /** The gateway's environment, its GATEWAY_MEMORY_BUDGET_BYTES in bytes. */
  childEnv: NodeJS.ProcessEnv;
  phaseSeconds: number;
  abuserKey: string;
  victimKey: string;
  measure(base: string, apiKey: string, seconds: number): Promise<VictimPhase>;
  summary(samples: Sample[]): Summary;
  log(line: string): void;
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const kinds = ['livez', 'importJobsRead', 'singlePush'] as const;

/** The victim's figures, alone (quiet) and beside the abuser (abused). */
export function victimFigures(d: Pick<VictimPhaseDeps, 'summary'>, quiet: VictimPhase, abused: VictimPhase) {
  const figures = (p: VictimPhase) => ({
    livez: d.summary(p.prober),
    importJobsRead: d.summary(p.read),
    singlePush: d.summary(p.push),
  });
  return { victimQuiet: figures(quiet), victimAbused: figures(abused) };
}

/** A line per request kind of the victim: p50 / p99 ms and statuses, quiet and abused. */
export function victimLines(v: ReturnType<typeof victimFigures>): string[] {
  const cell = (s: Summary) => `${s.ms.p50} / ${s.ms.p99} ${JSON.stringify(s.statuses)}`;
  return kinds.map(
    (k) => `victim ${k.padEnd(15)} ms p50 / p99: quiet ${cell(v.victimQuiet[k])}; abused ${cell(v.victimAbused[k])}`,
  );
}
