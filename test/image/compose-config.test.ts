import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Issue 30: docker-compose.yml is what Compose itself accepts. `docker compose` (the plugin) where
// it is installed, else `docker-compose` (Debian's, which `npm run test:image` installs); neither
// needs a daemon for `config`. Skipped, with the reason, where neither is installed.
const candidates = [['docker', 'compose'], ['docker-compose']] as const;
const compose = candidates.find(
  ([cmd, ...sub]) => spawnSync(cmd, [...sub, 'version'], { encoding: 'utf8' }).status === 0,
);
const reason = 'neither `docker compose` nor `docker-compose` is installed (npm run test:image installs it)';
if (!compose) console.warn(`compose-config: skipped: ${reason}`);

describe.skipIf(!compose)(`docker-compose.yml${compose ? '' : ` (skipped: ${reason})`}`, () => {
  it('passes `compose config` and renders every service', () => {
    const [cmd, ...sub] = compose!;
    const out = spawnSync(cmd, [...sub, '--project-directory', '.', '-f', 'docker-compose.yml', 'config'], {
      encoding: 'utf8',
    });
    expect(out.status, out.stderr).toBe(0);
    const rendered = parse(out.stdout) as {
      services: Record<string, { image?: string; stop_grace_period?: string; restart?: string }>;
    };
    expect(Object.keys(rendered.services).sort()).toEqual(['gateway', 'kafka', 'migrate', 'postgres', 'worker']);
    // The processes of the service share one image (one build).
    const appImages = new Set(['gateway', 'worker', 'migrate'].map((s) => rendered.services[s]!.image));
    expect([...appImages]).toEqual(['connect-integration-service:dev']);
    expect(rendered.services.gateway!.stop_grace_period).toMatch(/^\d+(\.\d+)?[a-z]+/);
  });
});
