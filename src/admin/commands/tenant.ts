import { randomUUID } from 'node:crypto';
import { nameArg, parseOptions, required } from '../args.js';
import type { Command } from '../command.js';
import { insertTenant } from '../store.js';

export const tenantCreate: Command<{ name: string }> = {
  name: 'tenant create',
  synopsis: '--name <name>',
  summary: 'Create a tenant.',
  parse(args) {
    const v = parseOptions(args, { name: { type: 'string' } });
    return { name: nameArg(required(v.name, 'name')) };
  },
  run: ({ pool }, { name }) => insertTenant(pool, { id: randomUUID(), name }),
};
