import cliProgress from 'cli-progress';

export type Counts = {
  /** Records whose fate is known: answered by the service, or rejected here. */
  done: number;
  /** Targets in batches the service answered. */
  sent: number;
  accepted: number;
  /** Rejected by the service or here (unreadable, too large). */
  rejected: number;
  /** In batches the service did not take (after every retry). */
  undelivered: number;
};

export type Progress<C> = {
  update(counts: C): void;
  /** A message between progress updates (a failed batch, a phase). */
  note(text: string): void;
  stop(): void;
};

/** Rate (done per second since start) and ETA, for a describe function. */
export type Pace = { perSecond: number; eta: string };

const number = (n: number) => n.toLocaleString('en-US');

/**
 * Progress on stderr: a bar (cli-progress) on a terminal; elsewhere a plain line at most every
 * two seconds, so the logs of a large file stay readable. `describe` says what the counts mean.
 */
export function createProgress<C extends { done: number }>(
  kind: 'bar' | 'lines',
  total: number | null,
  describe: (counts: C, pace: Pace) => string,
): Progress<C> {
  const started = Date.now();
  const pace = (c: C): Pace => {
    const perSecond = c.done / Math.max(0.001, (Date.now() - started) / 1000);
    const left = total === null ? null : Math.max(0, total - c.done);
    const eta = left === null || perSecond === 0 ? '' : `ETA ${Math.ceil(left / perSecond)} s`;
    return { perSecond, eta };
  };
  if (kind === 'bar') {
    const bars = new cliProgress.MultiBar(
      { stream: process.stderr, format: total === null ? '{text}' : '{bar} {percentage}% | {text}', hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    const bar = bars.create(total ?? 0, 0, { text: '' });
    return {
      update: (c) => bar.update(c.done, { text: describe(c, pace(c)) }),
      note: (text) => bars.log(`${text}\n`),
      stop: () => bars.stop(),
    };
  }
  let last = 0;
  let latest: C | null = null;
  const line = (c: C) => process.stderr.write(`connect-push: ${describe(c, pace(c))}\n`);
  return {
    update(c) {
      latest = c;
      if (Date.now() - last < 2000) return;
      last = Date.now();
      line(c);
    },
    note: (text) => process.stderr.write(`connect-push: ${text}\n`),
    stop: () => {
      if (latest) line(latest);
    },
  };
}

/** The push phase: targets done of the total, sent, accepted, rejected, rate, ETA. */
export const describePush =
  (total: number | null) =>
  (c: Counts, { perSecond, eta }: Pace): string =>
    [
      `${number(c.done)}${total === null ? '' : `/${number(total)}`} targets`,
      `sent ${number(c.sent)}`,
      `accepted ${number(c.accepted)}`,
      `rejected ${number(c.rejected)}`,
      ...(c.undelivered > 0 ? [`not delivered ${number(c.undelivered)}`] : []),
      `${number(Math.round(perSecond))} targets/s`,
      ...(eta ? [eta] : []),
    ].join(' | ');

/** The --wait phase: import jobs final of those created, targets applied and failed so far. */
export const describeWait =
  (jobs: number) =>
  (c: { done: number; applied: number; failed: number }): string =>
    `${number(c.done)}/${number(jobs)} import jobs final | applied ${number(c.applied)} | failed ${number(c.failed)}`;
