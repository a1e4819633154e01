import { appointmentIdPattern } from '../../shared/appointments/ids.js';
import { AdminError, UsageError, isUuid, parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { renderTrace } from '../trace/render.js';
import { traceKinds, traceRecord, type Trace, type TraceKind } from '../trace/trace.js';

type Input = { kind: TraceKind; id: string; json: boolean };

const isKind = (v: string | undefined): v is TraceKind => traceKinds.includes(v as TraceKind);

/** The id as the kind's table holds it; a malformed one is refused before any query. */
function idOf(kind: TraceKind, value: string): string {
  const id = value.trim();
  if (kind === 'import-job') {
    if (!/^[1-9]\d{0,17}$/.test(id))
      throw new AdminError(`an import job id is a positive integer, got ${JSON.stringify(id)}`);
    return id;
  }
  if (kind === 'appointment') {
    if (!appointmentIdPattern.test(id))
      throw new AdminError(`an appointment request id is apr_…, got ${JSON.stringify(id)}`);
    return id;
  }
  if (!isUuid(id)) throw new AdminError(`a ${kind} id is a UUID, got ${JSON.stringify(id)}`);
  return id.toLowerCase();
}

export const trace: Command<Input> = {
  name: 'trace',
  synopsis: `<${traceKinds.join('|')}> <id> [--json]`,
  summary:
    'Where a record is: its Kafka messages (topic, partition, offset, produced at), when, by which worker process and how ' +
    'each was applied or dead-lettered, pending ones, the webhook events it raised with their deliveries, and its trace id. ' +
    'A report; --json for JSON.',
  parse(args) {
    const { values, positionals } = parseCommandLine(args, { json: { type: 'boolean' } });
    const [kind, id, ...rest] = positionals;
    if (!isKind(kind))
      throw new UsageError(
        kind === undefined
          ? `missing what to trace (${traceKinds.join(', ')})`
          : `cannot trace ${JSON.stringify(kind)} (${traceKinds.join(', ')})`,
      );
    if (id === undefined) throw new UsageError(`missing the ${kind} id`);
    if (rest.length > 0) throw new UsageError(`unexpected ${JSON.stringify(rest[0])}`);
    return { kind, id: idOf(kind, id), json: values.json === true };
  },
  async run({ pool }, { kind, id }) {
    const found = await traceRecord(pool, kind, id);
    if (!found) throw new AdminError(`no ${kind} ${id}`);
    return found;
  },
  render: (result, { json }) => (json ? null : renderTrace(result as Trace)),
};
