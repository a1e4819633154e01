// The human-readable form of a trace (the admin CLI's `trace` without --json).
import type { Trace, TracedMessage } from './trace.js';

const or = (v: string | number | null | undefined, none = '-') => (v === null || v === undefined ? none : String(v));

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => `  ${r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')}`.trimEnd());
}

const position = (m: TracedMessage) =>
  m.topic === null
    ? m.state === 'pending'
      ? 'not handled yet'
      : 'not recorded'
    : `${m.topic}/${m.partition}@${m.offset}`;

const how = (m: TracedMessage) => {
  const items = m.items ? ` (${m.items.applied} applied, ${m.items.failed} failed)` : '';
  const again = m.duplicateDeliveries > 0 ? `, ${m.duplicateDeliveries} duplicate deliveries skipped` : '';
  return m.state === 'pending' ? 'pending' : `${or(m.how, 'handled')}${items}${again}`;
};

export function renderTrace(t: Trace): string {
  const lines = [`${t.kind} ${t.id}: ${t.status}${t.reason ? ` (${t.reason})` : ''}`];
  lines.push(`client ${t.client.id} (${t.client.name}), tenant ${t.tenantId}`);
  lines.push(`accepted ${t.acceptedAt}`);
  if (t.importJob) {
    const j = t.importJob;
    const c = j.counts;
    lines.push(`source ${j.sourceSystem}${j.externalBatchId ? `, batch ${j.externalBatchId}` : ''}`);
    lines.push(`started ${or(j.startedAt)}, completed ${or(j.completedAt)}`);
    lines.push(
      `targets: received ${c.received}, accepted ${c.accepted}, rejected ${c.rejected}, applied ${c.applied}, failed ${c.failed}`,
    );
  }
  lines.push(`trace ${t.traceIds.length > 0 ? t.traceIds.join(', ') : '(not recorded)'}`);
  const handled = t.messages.filter((m) => m.state === 'handled').length;
  lines.push('', `messages (${handled} of ${t.messages.length} handled)`);
  lines.push(
    ...table([
      ['chunk', 'topic/partition@offset', 'produced at', 'handled at', 'by', 'how'],
      ...t.messages.map((m) => [or(m.chunk), position(m), or(m.producedAt), or(m.handledAt), or(m.handledBy), how(m)]),
    ]),
  );
  lines.push('', t.webhooks.length > 0 ? 'webhook events' : 'webhook events: none');
  for (const e of t.webhooks) {
    lines.push(`  ${e.eventId} ${e.type} at ${e.createdAt}`);
    if (e.deliveries.length === 0) lines.push('    no endpoint subscribed');
    for (const d of e.deliveries) {
      const when = d.completedAt ? ` at ${d.completedAt}` : d.nextAttemptAt ? `, next attempt ${d.nextAttemptAt}` : '';
      const error = d.lastError ? `; last error: ${d.lastError}` : '';
      lines.push(
        `    → ${d.url} (${d.endpointId}): ${d.status} after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}${when}${error}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
