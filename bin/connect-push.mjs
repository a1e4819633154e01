#!/usr/bin/env node
// connect-push (src/push): in a checkout, its TypeScript source through tsx; in an image built
// without the sources, the compiled dist/push/cli.js.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const source = new URL('../src/push/cli.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/push/cli.js', import.meta.url).href);
}
