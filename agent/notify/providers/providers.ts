import type { ProviderName } from '../target.ts';
import { gitea } from './gitea.ts';
import { github } from './github.ts';
import { gitlab } from './gitlab.ts';
import type { Provider } from './request.ts';
import { slack } from './slack.ts';
import { teams } from './teams.ts';
import { webhook } from './webhook.ts';

/** Every provider by the name `notify[].provider` uses. */
export const providers: Record<ProviderName, Provider> = { webhook, slack, teams, github, gitlab, gitea };
