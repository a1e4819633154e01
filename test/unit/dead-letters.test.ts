import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { AdminError, UsageError } from '../../src/admin/args.js';
import { deadLettersList, deadLettersReplay, deadLettersShow } from '../../src/admin/commands/dead-letters.js';
import { decodeDeadLetter } from '../../src/shared/dead-letters/decode.js';
import { errorClassOf } from '../../src/shared/dead-letters/headers.js';
import { deadLetterKinds } from '../../src/shared/dead-letters/kinds.js';
import { envelope } from '../../src/shared/messages.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';

const kinds = deadLetterKinds({ topicPrefix: 'p.' });
const materials = kinds.find((k) => k.name === 'materials')!;
const tenantId = '0b6f1d8e-3c2a-4f5b-9d7e-1a2b3c4d5e6f';
const clientId = '1c7f2e9f-4d3b-4a6c-8e8f-2b3c4d5e6f70';

const stored = (value: string | null, headers: Record<string, string> = {}) => ({
  topic: materials.dlqTopic,
  partition: 0,
  offset: '41',
  key: 'wo-1',
  value: value === null ? null : Buffer.from(value),
  headers,
  timestamp: new Date('2026-11-26T10:00:00Z'),
});

describe('dead letters: what they are', () => {
  it('names every kind, its topic and dead-letter topic', () => {
    expect(kinds.map((k) => [k.name, k.topic, k.dlqTopic])).toEqual([
      ['inbound', 'p.inbound.targets', 'p.inbound.targets.dlq'],
      ['inbound-express', 'p.inbound.targets.express', 'p.inbound.targets.express.dlq'],
      ['jobs', 'p.jobs', 'p.jobs.dlq'],
      ['materials', 'p.workorders.materials', 'p.workorders.materials.dlq'],
      ['appointments', 'p.appointments', 'p.appointments.dlq'],
    ]);
  });

  it('classes errors by verdict and SQLSTATE or name', () => {
    expect(errorClassOf(Object.assign(new Error('x'), { code: '23514' }), 'permanent')).toBe('permanent/23514');
    expect(errorClassOf(Object.assign(new Error('x'), { code: 'ECONNRESET' }), 'transient')).toBe('transient/Error');
    expect(errorClassOf(new PermanentMessageError('not JSON'), 'permanent')).toBe('permanent/PermanentMessageError');
  });

  it('decodes a dead letter: origin, error, tenant, client, record and a payload summary', () => {
    const message = envelope(
      'workorders.materials.recorded',
      1,
      { tenantId, clientId, requestId: 'r-1', correlationId: 'c-1' },
      { materialUsageId: '2d8e3f0a-5e4c-4b7d-9f90-3c4d5e6f7081', workOrderId: 7, lines: [1, 2, 3] },
    );
    const d = decodeDeadLetter(
      materials,
      stored(JSON.stringify(message), {
        'x-dlq-error': 'check violated',
        'x-dlq-origin': 'p.workorders.materials/3/120',
        'x-dlq-worker': 'materials',
        'x-dlq-error-class': 'permanent/23514',
      }),
    );
    expect(d).toMatchObject({
      id: 'materials/0/41',
      deadLetteredAt: '2026-11-26T10:00:00.000Z',
      origin: { topic: 'p.workorders.materials', partition: 3, offset: '120' },
      error: 'check violated',
      errorClass: 'permanent/23514',
      tenantId,
      clientId,
      record: { type: 'materialUsage', id: '2d8e3f0a-5e4c-4b7d-9f90-3c4d5e6f7081' },
      replayOf: null,
      payload: {
        decoded: true,
        requestId: 'r-1',
        summary: { materialUsageId: '2d8e3f0a-5e4c-4b7d-9f90-3c4d5e6f7081', workOrderId: 7, linesCount: 3 },
      },
    });
  });

  it('keeps an undecodable one, with what it can tell (tenant header, no record)', () => {
    const d = decodeDeadLetter(materials, stored('not json', { 'tenant-id': tenantId }));
    expect(d).toMatchObject({
      tenantId,
      clientId: null,
      record: null,
      errorClass: 'unknown',
      origin: { topic: 'p.workorders.materials', partition: null, offset: null },
      payload: { decoded: false, problem: 'not JSON', bytes: 8 },
    });
  });
});

describe('dead-letters commands: command lines', () => {
  it('parses filters and refuses bad values before any connection', () => {
    expect(deadLettersList.parse(['--kind', 'inbound,jobs', '--since', '2026-11-26', '--error-class', '23'])).toEqual({
      filter: {
        kinds: ['inbound', 'jobs'],
        since: new Date('2026-11-26T00:00:00Z'),
        errorClass: '23',
        includeHandled: false,
        tenantId: undefined,
        clientId: undefined,
        recordId: undefined,
        until: undefined,
      },
      limit: 100,
    });
    // A kind outside the fixed list is a malformed command line: exit 2, as the help says.
    expect(() => deadLettersList.parse(['--kind', 'webhooks'])).toThrow(UsageError);
    expect(() => deadLettersList.parse(['--kind', 'nonsense'])).toThrow(UsageError);
    expect(() => deadLettersList.parse(['--tenant', 'acme'])).toThrow(AdminError);
    expect(() => deadLettersList.parse(['--since', '2026-11-27', '--until', '2026-11-26'])).toThrow(AdminError);
    expect(() => deadLettersShow.parse(['--id', 'inbound:0:1'])).toThrow(AdminError);
    expect(() => deadLettersShow.parse([])).toThrow(UsageError);
  });

  it('replay: a dry run unless --execute, a selection required, the operator named', () => {
    const dry = deadLettersReplay.parse(['--id', 'inbound/0/1,inbound/0/2', '--operator', 'kim']);
    expect(dry).toMatchObject({ execute: false, operator: 'kim', filter: { ids: ['inbound/0/1', 'inbound/0/2'] } });
    expect(deadLettersReplay.parse(['--all', '--execute', '--operator', 'kim']).execute).toBe(true);
    expect(() => deadLettersReplay.parse(['--operator', 'kim'])).toThrow(UsageError);
    expect(() => deadLettersReplay.parse(['--kind', 'jobs', '--operator', 'kim'])).toThrow(UsageError);
    expect(() => deadLettersReplay.parse(['--all', '--id', 'jobs/0/1', '--operator', 'kim'])).toThrow(UsageError);
    expect(() => deadLettersReplay.parse(['--all', '--operator', ' '])).toThrow(AdminError);
  });

  it('replay where $USER and $LOGNAME are unset (containers, CI): a dry run needs no name, --execute asks for --operator', () => {
    const saved = { USER: process.env.USER, LOGNAME: process.env.LOGNAME };
    delete process.env.USER;
    delete process.env.LOGNAME;
    try {
      expect(deadLettersReplay.parse(['--kind', 'inbound', '--since', '2026-11-26'])).toMatchObject({ execute: false });
      expect(deadLettersReplay.parse(['--all', '--execute', '--operator', 'ci-job-17']).operator).toBe('ci-job-17');
      const execute = deadLettersReplay.parse.bind(null, ['--all', '--execute']);
      // Named by the account when the system knows it, else the command asks for --operator.
      let account: string | null = null;
      try {
        account = userInfo().username || null;
      } catch {
        account = null;
      }
      if (account) expect(execute().operator).toBe(account);
      else expect(execute).toThrow(UsageError);
    } finally {
      for (const [k, v] of Object.entries(saved)) if (v !== undefined) process.env[k] = v;
    }
  });
});
