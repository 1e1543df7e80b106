import { headline } from '../notice.ts';
import type { Provider } from './request.ts';
import { json } from './request.ts';

/** Slack's mrkdwn gives &, < and > meaning: escaped as Slack documents (api.slack.com/reference/surfaces/formatting#escaping). */
function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const icons = { info: ':white_check_mark:', warning: ':warning:', error: ':x:' } as const;

/** A Slack incoming webhook (and Mattermost, Rocket.Chat: the same `text` payload). */
export const slack: Provider = (n, t) => {
  const lines = [`${icons[n.severity]} *${escape(headline(n))}*`, escape(n.summary)];
  if (n.diagnostic) lines.push(`\`${escape(n.diagnostic)}\``);
  return { url: t.url, headers: { ...json }, body: JSON.stringify({ text: lines.join('\n') }) };
};
