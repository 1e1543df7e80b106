import { describe, expect, it } from 'vitest';
import { projectItems, type ExportScope } from '../../agent/kinds/kit/export.ts';

// The split alone, over a loader that records what it was asked: which list an export makes for each project.
function scopes(projectIds: string[], cloudWide: boolean): ExportScope[] {
  const memos = new Map<string, Promise<unknown>>();
  const memo = <T>(key: string, load: () => Promise<T>): Promise<T> => {
    if (!memos.has(key)) memos.set(key, load());
    return memos.get(key) as Promise<T>;
  };
  const none = undefined as unknown as ExportScope['network'];
  return projectIds.map((projectId) => ({ network: none, compute: none, image: none, volume: none, memo, projectId, cloudWide, listed: () => [], ref: () => '' }));
}

const cloud = [
  { id: 'n1', project_id: 'a' },
  { id: 'n2', project_id: 'b' },
  { id: 'n3', project_id: 'a' },
  { id: 'n4', project_id: 'other' },
];

describe('an export lists each kind once for many projects', () => {
  it('several projects: one cloud-wide list, split by the owner field', async () => {
    const asked: (string | undefined)[] = [];
    const load = (project: string | undefined): Promise<Record<string, unknown>[]> => {
      asked.push(project);
      return Promise.resolve(cloud.filter((x) => project === undefined || x.project_id === project));
    };
    const [a, b, c] = scopes(['a', 'b', 'c'], true);
    const got = await Promise.all([a!, b!, c!].map((s) => projectItems(s, 'Network', 'project_id', load)));
    expect(got.map((items) => items.map((x) => x.id))).toEqual([['n1', 'n3'], ['n2'], []]);
    expect(asked).toEqual([undefined]);
  });

  it('one project: its own filtered list', async () => {
    const asked: (string | undefined)[] = [];
    const [a] = scopes(['a'], false);
    const items = await projectItems(a!, 'Network', 'project_id', (project) => {
      asked.push(project);
      return Promise.resolve(cloud.filter((x) => x.project_id === project));
    });
    expect(items.map((x) => x.id)).toEqual(['n1', 'n3']);
    expect(asked).toEqual(['a']);
  });
});
