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

export type Progress = {
  /** After each answered batch (and each local reject). */
  update(counts: Counts): void;
  /** A message between progress updates (a failed batch, a retry). */
  note(text: string): void;
  stop(): void;
};

const format = (n: number) => n.toLocaleString('en-US');

/**
 * Progress on stderr: a bar (cli-progress) on a terminal; elsewhere a plain line per answered
 * batch, at most one every two seconds, so logs of large files stay readable.
 */
export function createProgress(kind: 'bar' | 'lines', total: number | null, out = process.stderr): Progress {
  const started = Date.now();
  const rate = (c: Counts) => Math.round(c.sent / Math.max(0.001, (Date.now() - started) / 1000));
  if (kind === 'bar') {
    const bars = new cliProgress.MultiBar(
      {
        stream: out,
        format:
          total === null
            ? '{value} targets | sent {sent} | accepted {accepted} | rejected {rejected} | {rate}/s'
            : '{bar} {percentage}% | {value}/{total} targets | sent {sent} | accepted {accepted} | rejected {rejected} | {rate}/s | ETA {eta_formatted}',
        hideCursor: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    const bar = bars.create(total ?? 0, 0, { sent: 0, accepted: 0, rejected: 0, rate: 0 });
    return {
      update: (c) => bar.update(c.done, { ...c, rate: rate(c) }),
      note: (text) => bars.log(`${text}\n`),
      stop: () => bars.stop(),
    };
  }
  let last = 0;
  const line = (c: Counts) => {
    const perSecond = c.done / Math.max(0.001, (Date.now() - started) / 1000);
    const eta = total && c.done > 0 ? `, ETA ${Math.ceil(Math.max(0, total - c.done) / perSecond)} s` : '';
    const of = total ? `/${format(total)}` : '';
    out.write(
      `connect-push: ${format(c.done)}${of} targets, sent ${format(c.sent)}, accepted ${format(c.accepted)}, rejected ${format(c.rejected)}, ` +
        `${format(rate(c))} targets/s${eta}\n`,
    );
  };
  let latest: Counts | null = null;
  return {
    update(c) {
      latest = c;
      if (Date.now() - last < 2000) return;
      last = Date.now();
      line(c);
    },
    note: (text) => out.write(`connect-push: ${text}\n`),
    stop: () => {
      if (latest) line(latest);
    },
  };
}
