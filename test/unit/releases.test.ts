import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { serviceVersion } from '../../src/shared/version.js';

// Issue 52: the recorded releases (releases.json, cut by scripts/release) hold together: SemVer,
// ascending, each with its CHANGELOG section and a commit of this history, and the tree's version
// is a release's or the -dev of one above the last.

type Release = { version: string; commit: string; date: string };
const releases = JSON.parse(readFileSync('releases.json', 'utf8')) as Release[];
const changelog = readFileSync('CHANGELOG.md', 'utf8');
const semver = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
const parts = (v: string) => v.split('.').map(Number) as [number, number, number];
const above = (a: string, b: string) => {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! > y[i]!;
  return false;
};

describe('releases', () => {
  it('are SemVer, ascending, dated, each with its CHANGELOG section', () => {
    expect(releases.length).toBeGreaterThan(0);
    for (const [i, r] of releases.entries()) {
      expect(r.version).toMatch(semver);
      expect(r.commit).toMatch(/^[0-9a-f]{40}$/);
      expect(r.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      if (i > 0) expect(above(r.version, releases[i - 1]!.version)).toBe(true);
      expect(changelog).toContain(`\n## ${r.version} (${r.date}`);
    }
  });

  it("name commits of this repository's history", () => {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
    // A shallow clone (some CI checkouts) has no old commits to find: say so rather than fail.
    if (git('rev-parse', '--is-shallow-repository') === 'true') {
      console.warn('releases: a shallow clone; release commits not checked');
      return;
    }
    for (const r of releases)
      expect(git('merge-base', '--is-ancestor', r.commit, 'HEAD') || 'ancestor').toBe('ancestor');
  });

  it("say the tree's version: the last release's, or the -dev of one above it", () => {
    const last = releases.at(-1)!.version;
    const dev = /^(.*)-dev$/.exec(serviceVersion);
    if (dev) expect(above(dev[1]!, last)).toBe(true);
    else expect(serviceVersion).toBe(last);
    expect(changelog).toMatch(dev ? /\n## Unreleased\n/ : new RegExp(`\n## ${last.replaceAll('.', '\\.')} `));
  });
});
