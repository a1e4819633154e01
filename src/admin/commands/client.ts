import { randomUUID } from 'node:crypto';
import {
  AdminError,
  UsageError,
  nameArg,
  parseOptions,
  rateLimitArg,
  required,
  uploadQuotaArg,
  uuidArg,
} from '../args.js';
import type { Command } from '../command.js';
import { insertClients, setClientRateLimit, setClientUploadQuota } from '../store.js';

export const clientCreate: Command<{ tenantId: string; name: string; rateLimitPerMinute: number | null }> = {
  name: 'client create',
  synopsis: '--tenant <tenantId> --name <name> [--rate-limit <requests per minute>]',
  summary: 'Create an Integration Client of a tenant (no --rate-limit: the gateway default applies).',
  parse(args) {
    const v = parseOptions(args, {
      tenant: { type: 'string' },
      name: { type: 'string' },
      'rate-limit': { type: 'string' },
    });
    return {
      tenantId: uuidArg(required(v.tenant, 'tenant'), 'tenant'),
      name: nameArg(required(v.name, 'name')),
      rateLimitPerMinute: v['rate-limit'] === undefined ? null : rateLimitArg(v['rate-limit'], 'rate-limit'),
    };
  },
  async run({ pool }, input) {
    const [client] = await insertClients(pool, [{ id: randomUUID(), ...input }]);
    if (!client) throw new AdminError(`tenant ${input.tenantId} not found`);
    return client;
  },
};

export const clientRateLimit: Command<{ clientId: string; perMinute: number | null }> = {
  name: 'client rate-limit',
  synopsis: '--client <clientId> (--per-minute <n> | --default)',
  summary: "Set a client's rate limit, or --default to fall back to the gateway's RATE_LIMIT_PER_MINUTE.",
  parse(args) {
    const v = parseOptions(args, {
      client: { type: 'string' },
      'per-minute': { type: 'string' },
      default: { type: 'boolean' },
    });
    const clientId = uuidArg(required(v.client, 'client'), 'client');
    if ((v['per-minute'] === undefined) === (v.default !== true)) {
      throw new UsageError('give exactly one of --per-minute <n> and --default');
    }
    return { clientId, perMinute: v['per-minute'] === undefined ? null : rateLimitArg(v['per-minute'], 'per-minute') };
  },
  async run({ pool }, { clientId, perMinute }) {
    const updated = await setClientRateLimit(pool, clientId, perMinute);
    if (!updated) throw new AdminError(`client ${clientId} not found`);
    return updated;
  },
};

export const clientUploadQuota: Command<{ clientId: string; bytesPerSecond: number | null }> = {
  name: 'client upload-quota',
  synopsis: '--client <clientId> (--bytes-per-second <n> | --default)',
  summary:
    'Set the body bytes per second a client may send to all gateway replicas together, or --default for UPLOAD_BYTES_PER_SECOND.',
  parse(args) {
    const v = parseOptions(args, {
      client: { type: 'string' },
      'bytes-per-second': { type: 'string' },
      default: { type: 'boolean' },
    });
    const clientId = uuidArg(required(v.client, 'client'), 'client');
    if ((v['bytes-per-second'] === undefined) === (v.default !== true)) {
      throw new UsageError('give exactly one of --bytes-per-second <n> and --default');
    }
    const given = v['bytes-per-second'];
    return { clientId, bytesPerSecond: given === undefined ? null : uploadQuotaArg(given, 'bytes-per-second') };
  },
  async run({ pool }, { clientId, bytesPerSecond }) {
    const updated = await setClientUploadQuota(pool, clientId, bytesPerSecond);
    if (!updated) throw new AdminError(`client ${clientId} not found`);
    return updated;
  },
};
