import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/setup/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    // Integration files share one broker and one PostgreSQL server; each isolates itself
    // (own database cloned from a migrated template, own topic prefix and consumer groups).
    pool: 'forks',
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
  },
});
