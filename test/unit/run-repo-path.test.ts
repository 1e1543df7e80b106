import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoPath } from '../../agent/sync/repo-path.ts';

describe('files named as the repository names them', () => {
  it('maps the agent\'s private copy of a revision back to the path in the repository', () => {
    const copy = join('/var/lib/ks/state/syncs/app/revisions', '0123abcd');
    expect(repoPath(join(copy, 'tenants/team-b/bad.yaml'), copy, './')).toBe('tenants/team-b/bad.yaml');
    expect(repoPath(join(copy, 'team-b/bad.yaml'), copy, 'tenants')).toBe('tenants/team-b/bad.yaml');
    expect(repoPath(join(copy, 'bad.yaml'), copy, './clusters/prod/')).toBe('clusters/prod/bad.yaml');
    // Anything else is left as it was.
    expect(repoPath('/elsewhere/x.yaml', copy, './')).toBe('/elsewhere/x.yaml');
  });
});
