import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { workerKinds } from '../../src/workers/registry.js';

// Issue 13: the Kubernetes manifests (deploy/k8s) validated against the Kubernetes schemas
// (kubernetes-models: the API's OpenAPI schemas, checked with ajv), and what a deployment of this
// service needs: probes, resources, a PodDisruptionBudget per Deployment, a worker Deployment per
// kind, a grace period longer than the shutdown timeout.
const dir = 'deploy/k8s';
type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec?: any; data?: any };

const models: Record<string, new (data: any) => { validate(): void }> = {
  'apps/v1 Deployment': Deployment,
  'v1 Service': Service,
  'v1 ConfigMap': ConfigMap,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
  'batch/v1 Job': Job,
  'autoscaling/v2 HorizontalPodAutoscaler': HorizontalPodAutoscaler,
};

/** Validates one object against its kind's schema; the error names the object and the field. */
function validate(m: Manifest): void {
  const Model = models[`${m.apiVersion} ${m.kind}`];
  if (!Model) throw new Error(`no schema known for ${m.apiVersion} ${m.kind} (${m.metadata?.name})`);
  new Model(m).validate();
}

const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
const manifests: Manifest[] = kustomization.resources.flatMap((file) =>
  parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return d.toJS() as Manifest;
  }),
);
const deployments = manifests.filter((m) => m.kind === 'Deployment');
const containerOf = (m: Manifest) => m.spec.template.spec.containers[0];
const preStopSeconds = (m: Manifest) => {
  const command: string[] | undefined = containerOf(m).lifecycle?.preStop?.exec?.command;
  return command?.[0] === 'sleep' ? Number(command[1]) : 0;
};
// kubectl renders a kustomization without a cluster; where it is installed (as on our CI machine)
// the test also checks what `kubectl apply -k` would send.
const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

describe('deploy/k8s', () => {
  it('lists every manifest file in its kustomization', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it('holds only objects valid against the Kubernetes schemas', () => {
    expect(manifests.length).toBeGreaterThan(10);
    for (const m of manifests) expect(() => validate(m), `${m.kind} ${m.metadata.name}`).not.toThrow();
  });

  it('validation catches a broken object', () => {
    const broken = structuredClone(deployments[0]!);
    broken.spec.template.spec.containers[0].ports = [{ containerPort: 'eighty' }];
    expect(() => validate(broken)).toThrow(/containerPort must be integer/);
    expect(() => validate({ ...deployments[0]!, kind: 'Deploymnet' })).toThrow(/no schema known/);
  });

  it('runs one worker Deployment per kind (webhooks: one per lane), and probes, resources and a PodDisruptionBudget for each Deployment', () => {
    const envOf = (d: (typeof deployments)[number], name: string): string | undefined =>
      d.spec.template.spec.containers[0].env?.find((e: { name: string }) => e.name === name)?.value;
    const kindsDeployed = deployments.map((d) => envOf(d, 'WORKERS')).filter(Boolean);
    expect([...new Set(kindsDeployed)].sort()).toEqual(Object.keys(workerKinds).sort());
    // The webhook dispatchers split by lane: both lanes served (answering alone never tries a new endpoint).
    const webhookLanes = deployments
      .filter((d) => envOf(d, 'WORKERS') === 'webhooks')
      .map((d) => envOf(d, 'WEBHOOK_LANE'));
    expect(webhookLanes.sort()).toEqual(['answering', 'not-answering']);
    expect(kindsDeployed.length).toBe(Object.keys(workerKinds).length + 1);

    const shutdownMs = Number(manifests.find((m) => m.kind === 'ConfigMap')!.data.SHUTDOWN_TIMEOUT_MS);
    const budgets = manifests.filter((m) => m.kind === 'PodDisruptionBudget');
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      const c = pod.containers[0];
      expect(c.livenessProbe?.httpGet?.path, `${d.metadata.name} liveness`).toBe('/livez');
      // Workers report readiness with their dependencies (no traffic is routed to them); the
      // gateway's readiness ignores the shared dependencies (see gateway.yaml).
      const readiness = d.metadata.name === 'connect-gateway' ? '/livez' : '/readyz';
      expect(c.readinessProbe?.httpGet?.path, `${d.metadata.name} readiness`).toBe(readiness);
      expect(c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory).toBeTruthy();
      expect(pod.securityContext.runAsNonRoot && c.securityContext.readOnlyRootFilesystem).toBe(true);
      // SIGTERM comes after preStop; the process then has SHUTDOWN_TIMEOUT_MS before it exits itself.
      expect(pod.terminationGracePeriodSeconds * 1000, d.metadata.name).toBeGreaterThan(
        preStopSeconds(d) * 1000 + shutdownMs,
      );
      const labels = d.spec.template.metadata.labels;
      const covered = budgets.some((b) =>
        Object.entries(b.spec.selector.matchLabels).every(([k, v]) => labels[k] === v),
      );
      expect(covered, `${d.metadata.name} has a PodDisruptionBudget`).toBe(true);
    }
  });

  it('leaves the replica count of an autoscaled Deployment to its HorizontalPodAutoscaler', () => {
    for (const hpa of manifests.filter((m) => m.kind === 'HorizontalPodAutoscaler')) {
      const target = deployments.find((d) => d.metadata.name === hpa.spec.scaleTargetRef.name);
      expect(target, hpa.metadata.name).toBeDefined();
      expect(target!.spec.replicas, target!.metadata.name).toBeUndefined();
    }
  });

  it('gives the schema owner credentials to the migration Job only', () => {
    const secretsOf = (m: Manifest) => JSON.stringify(m.spec.template.spec).match(/"name":"connect-[a-z-]+"/g) ?? [];
    for (const d of deployments) expect(secretsOf(d), d.metadata.name).not.toContain('"name":"connect-migration"');
    const job = manifests.find((m) => m.kind === 'Job')!;
    expect(secretsOf(job)).toEqual(['"name":"connect-migration"']);
  });

  it.skipIf(!kubectl)('renders with kubectl kustomize into the same valid objects, image tag set', () => {
    const out = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    expect(out.status, out.stderr).toBe(0);
    const rendered = parseAllDocuments(out.stdout).map((d) => d.toJS() as Manifest);
    const names = (ms: Manifest[]) => ms.map((m) => `${m.kind}/${m.metadata.name}`).sort();
    expect(names(rendered)).toEqual(names(manifests));
    for (const m of rendered) expect(() => validate(m), `${m.kind} ${m.metadata.name}`).not.toThrow();
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const m of rendered.filter((r) => r.spec?.template))
      expect(containerOf(m).image, m.metadata.name).toBe(`connect-integration-service:${version}`);
  });
});
