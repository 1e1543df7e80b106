import { headline } from '../notice.ts';
import type { Provider } from './request.ts';
import { json } from './request.ts';

const colors = { info: 'Good', warning: 'Warning', error: 'Attention' } as const;

/**
 * A Teams incoming webhook (a Workflows "when a webhook request is received"
 * flow): a message with one Adaptive Card, the shape Microsoft documents for
 * both Workflows and the retired Office 365 connectors.
 */
export const teams: Provider = (n, t) => {
  const body: { type: string; text: string; wrap: boolean; weight?: string; color?: string; fontType?: string }[] = [
    { type: 'TextBlock', text: headline(n), wrap: true, weight: 'Bolder', color: colors[n.severity] },
    { type: 'TextBlock', text: n.summary, wrap: true },
  ];
  if (n.diagnostic) body.push({ type: 'TextBlock', text: n.diagnostic, wrap: true, fontType: 'Monospace' });
  const card = { $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4', body };
  return {
    url: t.url,
    headers: { ...json },
    body: JSON.stringify({ type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }] }),
  };
};
