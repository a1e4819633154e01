import { defineConfig } from 'vitest/config';
import SpreadLongFiles from './test/setup/sequencer.js';
import { measureTimeScale } from './test/support/time-scale.js';

// Deadlines grow with the machine's measured slowness (see test/support/time-scale.ts); the test
// processes inherit the factor through the environment.
process.env.TEST_TIME_SCALE ??= String(measureTimeScale());
const scale = Number(process.env.TEST_TIME_SCALE);
console.log(`tests: time scale ${scale} (deadlines are idle-machine figures times this)`);

export default defineConfig({
  test: {
    globalSetup: ['test/setup/global-setup.ts'],
    setupFiles: ['test/setup/kill-left-processes.ts'],
    include: ['test/**/*.test.ts'],
    // Integration files share one broker and one PostgreSQL server; each isolates itself
    // (own database cloned from a migrated template, own topic prefix and consumer groups).
    pool: 'forks',
    maxWorkers: 3,
    sequence: { sequencer: SpreadLongFiles }, // the few long files apart (test/setup/sequencer.ts)
    testTimeout: Math.round(60_000 * scale),
    hookTimeout: Math.round(120_000 * scale),
    teardownTimeout: Math.round(60_000 * scale),
  },
});
