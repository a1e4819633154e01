import type { Config } from '../config.js';
import { inTransaction, type Pool } from '../db/pool.js';
import type { MessageBus, OutboundMessage, StoredMessage } from '../kafka/bus.js';
import { decodeDeadLetter, listed, type DeadLetter, type DeadLetterDetail } from './decode.js';
import { deadLetterHeaders } from './headers.js';
import { deadLetterKinds, type DeadLetterKind } from './kinds.js';
import { handledIn, insertAction, listActions, markHandled, setActionCount } from './ledger-sql.js';
import { recordState } from './records.js';

// Dead letters for operators (the admin CLI today, an admin API later): list, show, replay and
// purge, every replay and purge recorded. Kafka cannot delete one message, so a replayed or purged
// dead letter stays in its topic and is marked handled in PostgreSQL (dead_letters_handled):
// lists, replays and the connect_dead_letters metric leave it out from then on.

/** What selects dead letters. Every field narrows; `ids` names them one by one. */
export type DeadLetterFilter = {
  /** Dead-letter kinds (deadLetterKindNames); empty: all. */
  kinds?: string[];
  ids?: string[];
  tenantId?: string;
  clientId?: string;
  /** The id of the record a dead letter belongs to (import job, field job, material usage, appointment request). */
  recordId?: string;
  /** Dead-lettered at or after / before. */
  since?: Date;
  until?: Date;
  /** Matches the verdict (`permanent`, `transient`) or the start of the code (`23514`, `23`, `PermanentMessageError`). */
  errorClass?: string;
  /** Also replayed and purged ones (lists only; replay and purge never touch a handled dead letter). */
  includeHandled?: boolean;
};

export type Handled = { actionId: number; action: 'replay' | 'purge'; operator: string; at: string };
export type ListedDeadLetter = DeadLetter & { handled: Handled | null };

/** Who asks for a replay or purge, and whether it is only a dry run (the default). */
export type ActionRequest = { operator: string; execute: boolean; note?: string | null };

export type ActionResult = {
  action: 'replay' | 'purge';
  dryRun: boolean;
  /** How many dead letters were (or in a dry run would be) replayed or purged. */
  count: number;
  byKind: Record<string, number>;
  /** Recorded actions, one per dead-letter topic touched (none in a dry run). */
  actions: { actionId: number; kind: string; count: number; at: string }[];
  deadLetters: ListedDeadLetter[];
};

type Loaded = { kind: DeadLetterKind; message: StoredMessage; detail: DeadLetterDetail; handled: Handled | null };

export type DeadLetters = ReturnType<typeof createDeadLetters>;

/** How long reading one dead-letter topic may take. */
const kafkaTimeoutMs = 30_000;

export function createDeadLetters({
  pool,
  bus,
  kafka,
}: {
  pool: Pool;
  bus: MessageBus;
  kafka: Pick<Config['kafka'], 'topicPrefix'>;
}) {
  const kinds = deadLetterKinds(kafka);

  const kindsOf = (names: string[] | undefined) =>
    names && names.length > 0 ? kinds.filter((k) => names.includes(k.name)) : kinds;

  async function load(kind: DeadLetterKind): Promise<Loaded[]> {
    const [messages, handled] = await Promise.all([
      bus.readTopic(kind.dlqTopic, kafkaTimeoutMs),
      pool.query<{ partition: number; offset: string } & Omit<Handled, 'at'> & { at: Date }>(handledIn, [
        kind.dlqTopic,
      ]),
    ]);
    const handledAt = new Map(
      handled.rows.map(({ partition, offset, at, ...h }) => [
        `${partition}/${offset}`,
        { ...h, at: at.toISOString() } as Handled,
      ]),
    );
    return messages.map((message) => ({
      kind,
      message,
      detail: decodeDeadLetter(kind, message),
      handled: handledAt.get(`${message.partition}/${message.offset}`) ?? null,
    }));
  }

  const matches = (f: DeadLetterFilter) => (l: Loaded) => {
    const d = l.detail;
    const cls = f.errorClass?.toLowerCase();
    const [verdict, code = ''] = d.errorClass.toLowerCase().split('/');
    return (
      (f.includeHandled || l.handled === null) &&
      (!f.ids || f.ids.includes(d.id)) &&
      (!f.tenantId || d.tenantId === f.tenantId) &&
      (!f.clientId || d.clientId === f.clientId) &&
      (!f.recordId || d.record?.id === f.recordId) &&
      (!f.since || Date.parse(d.deadLetteredAt) >= f.since.getTime()) &&
      (!f.until || Date.parse(d.deadLetteredAt) < f.until.getTime()) &&
      (!cls || verdict === cls || code.startsWith(cls))
    );
  };

  async function select(f: DeadLetterFilter): Promise<Loaded[]> {
    const loaded = await Promise.all(kindsOf(f.kinds).map(load));
    return loaded.flat().filter(matches(f));
  }

  const toListed = (l: Loaded): ListedDeadLetter => ({ ...listed(l.detail), handled: l.handled });

  /** The message to send again: its key, value and own headers, plus where it was replayed from. */
  const replayMessage = ({ message }: Loaded): OutboundMessage => ({
    key: message.key ?? '',
    value: message.value ?? '',
    headers: {
      ...Object.fromEntries(
        Object.entries(message.headers).filter(([k]) => !Object.values<string>(deadLetterHeaders).includes(k)),
      ),
      [deadLetterHeaders.replayOf]: `${message.topic}/${message.partition}/${message.offset}`,
    },
  });

  /**
   * Replay or purge what f selects, one transaction per dead-letter topic: record the action, mark
   * its dead letters handled (skipping any a concurrent action marked first), send them (replay),
   * then commit. A send that fails rolls the marks back: nothing is recorded as replayed that was
   * not acknowledged by Kafka. The transaction is held across the send on purpose: so that two
   * operators replaying the same dead letters at once send each one once. A crash after the send
   * and before COMMIT leaves it unmarked: replayed again later, the kind's ledger makes the second
   * apply a no-op.
   */
  async function act(action: 'replay' | 'purge', f: DeadLetterFilter, req: ActionRequest): Promise<ActionResult> {
    const chosen = await select({ ...f, includeHandled: false });
    const result: ActionResult = { action, dryRun: !req.execute, count: 0, byKind: {}, actions: [], deadLetters: [] };
    for (const kind of kindsOf(f.kinds)) {
      const ofKind = chosen.filter((l) => l.kind === kind);
      if (ofKind.length === 0) continue;
      let done = ofKind;
      if (req.execute) {
        const recorded = await inTransaction(pool, async (tx) => {
          const { rows } = await tx.query<{ id: number; at: Date }>(insertAction, [
            action,
            req.operator,
            kind.dlqTopic,
            JSON.stringify(selectionOf(f)),
            req.note ?? null,
          ]);
          const actionId = rows[0]!.id;
          const marked = await tx.query<{ partition: number; offset: string }>(markHandled, [
            kind.dlqTopic,
            ofKind.map((l) => l.message.partition),
            ofKind.map((l) => l.message.offset),
            actionId,
          ]);
          const won = new Set(marked.rows.map((r) => `${r.partition}/${r.offset}`));
          const mine = ofKind.filter((l) => won.has(`${l.message.partition}/${l.message.offset}`));
          if (action === 'replay' && mine.length > 0) await bus.produce(kind.topic, mine.map(replayMessage));
          await tx.query(setActionCount, [actionId, mine.length]);
          return { actionId, at: rows[0]!.at, mine };
        });
        done = recorded.mine;
        const handled = { actionId: recorded.actionId, action, operator: req.operator, at: recorded.at.toISOString() };
        for (const l of done) l.handled = handled;
        result.actions.push({
          actionId: recorded.actionId,
          kind: kind.name,
          count: done.length,
          at: handled.at,
        });
      }
      result.count += done.length;
      result.byKind[kind.name] = done.length;
      result.deadLetters.push(...done.map(toListed));
    }
    return result;
  }

  return {
    async list(f: DeadLetterFilter): Promise<ListedDeadLetter[]> {
      return (await select(f)).map(toListed);
    },

    /** One dead letter in full (headers, error, origin, payload summary) with its record as it is now; null when absent. */
    async show(id: string): Promise<(DeadLetterDetail & { handled: Handled | null; recordNow: unknown }) | null> {
      const [found] = await select({ kinds: [id.split('/')[0]!], ids: [id], includeHandled: true });
      if (!found) return null;
      return { ...found.detail, handled: found.handled, recordNow: await recordState(pool, found.detail) };
    },

    replay: (f: DeadLetterFilter, req: ActionRequest) => act('replay', f, req),
    purge: (f: DeadLetterFilter, req: ActionRequest) => act('purge', f, req),

    async actions(limit: number, kindNames?: string[]) {
      const topics = kindNames && kindNames.length > 0 ? kindsOf(kindNames).map((k) => k.dlqTopic) : null;
      const { rows } = await pool.query(listActions, [limit, topics]);
      const kindOf = new Map(kinds.map((k) => [k.dlqTopic, k.name]));
      return rows.map((r) => ({ ...r, kind: kindOf.get(r.dlqTopic) ?? null, at: (r.at as Date).toISOString() }));
    },
  };
}

/** The filter as recorded with an action (dates as ISO text). */
function selectionOf(f: DeadLetterFilter): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(f)
      .filter(([k, v]) => v !== undefined && k !== 'includeHandled')
      .map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]),
  );
}
