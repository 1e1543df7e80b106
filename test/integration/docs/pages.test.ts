import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { failure, leftovers, namespacesOf, runPage, runnablePages } from '../../support/docs-run.ts';

/*
 * The executable-documentation contract, run: every page of tutorials/ and how-to/ with runnable
 * blocks, as a reader would (test/support/docs-run.ts), except take-over.md (its acceptance test
 * makes the project it takes over: take-over.test.ts). No page asks for kubernetes yet: one that does
 * fails here ("run it from the Kubernetes lane"), until a file of that lane (importing
 * test/testbed/kubernetes/peer.ts) runs it with `kubeconfig: kube.kubeconfig`. A page fails naming its block's line and output, and fails when it
 * leaves anything in OpenStack named after its namespaces.
 */
const list = (dir: string): string[] => readdirSync(dir).map((f) => join(dir, f));
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
const own = new Set(['how-to/take-over.md']);
const pages = [...runnablePages('tutorials', list), ...runnablePages('how-to', list)].filter((p) => !own.has(p));

describe('docs pages run as written', () => {
  it('finds runnable pages', () => {
    expect(pages.length).toBeGreaterThan(0);
  });

  it.each(pages)('%s', async (page) => {
    const run = await runPage(page);
    expect(run.code, failure(run)).toBe(0);
    expect(await leftovers(cloud, namespacesOf(page)), `${page} left these behind (its Clean up section must remove them)`).toEqual([]);
  }, 1_800_000);
});
