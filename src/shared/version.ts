import { readFileSync } from 'node:fs';

/** The service version, from package.json (read once at start). */
export const serviceVersion: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
