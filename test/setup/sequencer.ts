import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The suite's longest files, longest first: minutes each on the 2-core CI machine, where the rest
 * take seconds (the three-broker cluster and the rolling upgrade about 7, the Patroni failover
 * about 3, scripts/stack about 2.5, in the clean-clone run of 2026-12-05). Vitest's own order (by
 * size in a fresh clone, by last duration after a run) starts them together: on 2 cores they then
 * slow each other (the cluster's file took 4.6 min alone, 7.0 beside the others).
 */
export const longFiles = [
  'test/faults/kafka-cluster.test.ts',
  'test/faults/rolling-upgrade.test.ts',
  'test/faults/postgres-failover.test.ts',
  'test/e2e/stack-script.test.ts',
];

/**
 * Vitest's order, with the long files spread over the first half of the run: the longest first,
 * each next one after another stretch of the other files (so they neither start together nor
 * leave one running alone at the end).
 */
export default class SpreadLongFiles extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => longFiles.indexOf(relative(this.ctx.config.root, f.moduleId));
    const long = sorted.filter((f) => rank(f) >= 0).sort((a, b) => rank(a) - rank(b));
    const rest = sorted.filter((f) => rank(f) < 0);
    const stretch = Math.floor(rest.length / (2 * Math.max(1, long.length)));
    const ordered: TestSpecification[] = [];
    long.forEach((f, i) => {
      ordered.push(f, ...rest.slice(i * stretch, (i + 1) * stretch));
    });
    return [...ordered, ...rest.slice(long.length * stretch)];
  }
}
