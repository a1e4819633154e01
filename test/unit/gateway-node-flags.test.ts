import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { gatewayNodeFlags } from '../../src/gateway/node-flags.js';

// Every file that starts a gateway passes gatewayNodeFlags before the entry point, so that the
// gateway runs as measured wherever it is started (src/gateway/node-flags.ts says why).
const read = (file: string) => readFileSync(file, 'utf8');
const entry = 'dist/gateway/server.js';

describe('gateway Node flags', () => {
  it('are passed by the image, compose, the Kubernetes manifest, scripts/stack and npm run gateway', () => {
    expect(gatewayNodeFlags.length).toBeGreaterThan(0);
    const cmd = /^CMD (.*)$/m.exec(read('Dockerfile'))![1]!;
    const compose = parse(read('docker-compose.yml')) as { services: { gateway: { command: string[] } } };
    const k8s = parseAllDocuments(read('deploy/k8s/gateway.yaml'))
      .map((d) => d.toJS())
      .find((d) => d?.kind === 'Deployment');
    const commands: Record<string, string[]> = {
      Dockerfile: JSON.parse(cmd) as string[],
      'docker-compose.yml': compose.services.gateway.command,
      'deploy/k8s/gateway.yaml': k8s.spec.template.spec.containers[0].command,
    };
    for (const [file, command] of Object.entries(commands)) {
      expect(command, file).toEqual(['node', ...gatewayNodeFlags, entry]);
    }
    const stack = /declare -A NODE_FLAGS=\(\[gateway\]="([^"]*)"/.exec(read('scripts/stack'))?.[1];
    expect(stack, 'scripts/stack').toBe(gatewayNodeFlags.join(' '));
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.gateway).toBe(`node ${gatewayNodeFlags.join(' ')} --import tsx src/gateway/server.ts`);
  });
});
