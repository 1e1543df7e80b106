// Fixture: the in-cluster front end composes the same pieces.
import { apply } from '../act/apply.ts';
import { hook } from '../hooks/git-hook.ts';
import { loop } from '../gitops/sync-loop.ts';

export const controller = apply + hook + loop;
