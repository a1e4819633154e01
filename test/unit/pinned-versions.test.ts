import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Issue 13: the image on a supported Node LTS (the release the suite runs on), every image pinned
// to an exact version, one Kafka version everywhere (docker-compose.yml runs what scripts/kafka
// runs), a restart policy on every service of the compose file.
const read = (path: string) => readFileSync(path, 'utf8');
const dockerfile = read('Dockerfile');
const pkg = JSON.parse(read('package.json')) as { engines: { node: string }; devDependencies: Record<string, string> };
type Service = { image?: string; build?: unknown; restart?: string };
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };

const arg = (name: string) => dockerfile.match(new RegExp(`^ARG ${name}=(.+)$`, 'm'))?.[1];
const nodeVersion = arg('NODE_VERSION')!;
const nodeImage = arg('NODE_IMAGE')!.replace('${NODE_VERSION}', nodeVersion);
/** name:tag where the tag starts with a full version (major.minor[.patch]), e.g. postgres:16.10-bookworm. */
const exactTag = /^[a-z0-9./_-]+:\d+\.\d+(\.\d+)?(-[a-z0-9.-]+)?$/;
const numbers = (v: string) => v.split('.').map(Number);

describe('the image and the compose file', () => {
  it('build on an exact Node LTS release that package.json "engines" accepts', () => {
    expect(nodeVersion).toMatch(/^\d+\.\d+\.\d+$/);
    const [major, minor] = numbers(nodeVersion) as [number, number];
    expect(major % 2, 'an even major: an LTS line').toBe(0);
    expect(major).toBeGreaterThanOrEqual(22); // Node 20 reached its end of life in April 2026
    const range = pkg.engines.node.match(/^>=(\d+)\.(\d+) <(\d+)$/);
    expect(range, `engines.node "${pkg.engines.node}"`).not.toBeNull();
    const [, lowMajor, lowMinor, below] = range!.map(Number) as [number, number, number, number];
    expect(major > lowMajor || (major === lowMajor && minor >= lowMinor)).toBe(true);
    expect(major).toBeLessThan(below);
  });

  it('pins every image it pulls to an exact version', () => {
    expect(nodeImage).toMatch(exactTag);
    for (const from of dockerfile.match(/^FROM .+$/gm)!) expect(from).toMatch(/^FROM \$\{NODE_IMAGE\} AS \w+$/);
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build) continue; // the service's own image, built from the Dockerfile above
      expect(service.image, name).toMatch(exactTag);
    }
  });

  it('runs the Kafka release scripts/kafka runs, and no other', () => {
    const kafkaVersion = read('scripts/kafka').match(/^KAFKA_VERSION="([\d.]+)"/m)?.[1];
    expect(kafkaVersion).toMatch(/^\d+\.\d+\.\d+$/);
    expect(compose.services.kafka?.image).toBe(`apache/kafka:${kafkaVersion}`);
    const kafkaImages = Object.values(compose.services).filter((s) => /kafka/.test(s.image ?? ''));
    expect(kafkaImages).toHaveLength(1);
    expect(Object.keys(pkg.devDependencies).filter((d) => d.includes('testcontainers'))).toEqual([]);
  });

  it('restarts every service (the one-shot migration only on failure)', () => {
    for (const [name, service] of Object.entries(compose.services))
      expect(service.restart, name).toBe(name === 'migrate' ? 'on-failure:5' : 'unless-stopped');
  });

  it('runs the runtime image as a non-root user given by number, with source maps on', () => {
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(/^ENV NODE_OPTIONS=--enable-source-maps$/m);
    // A number lets Kubernetes check runAsNonRoot; 1000 is the node image's `node` user.
    expect(runtime).toMatch(/^USER 1000:1000$/m);
  });
});
