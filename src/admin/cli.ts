// The operators' admin CLI: `npm run --silent admin -- <command> [options]` (tsx) or
// `node dist/admin/cli.js <command> [options]`. Run with no arguments for the usage text.
import { runAdmin } from './run.js';

// stdout carries exactly one JSON document; anything a library logs through console goes to stderr.
console.log = console.info = console.debug = console.error;

process.exitCode = await runAdmin(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
