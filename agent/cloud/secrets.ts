import { randomBytes } from 'node:crypto';
import { CHARTS } from './catalogue.ts';

/**
 * The credentials the charts share, generated once per cloud and kept in a Secret the
 * agent owns (never in Git, logs, status or plans): a render with the same secrets is
 * byte-identical, which is what makes a second plan empty.
 */
export interface CloudSecrets {
  databaseRoot: string;
  messagingAdmin: string;
  identityAdmin: string;
  memcacheSecretKey: string;
  services: Record<string, { database: string; messaging: string; identity: string }>;
}

const token = (bytes: number, random: (n: number) => Buffer): string => random(bytes).toString('base64url');

export function generateSecrets(random: (n: number) => Buffer = randomBytes): CloudSecrets {
  return {
    databaseRoot: token(24, random),
    messagingAdmin: token(24, random),
    identityAdmin: token(24, random),
    memcacheSecretKey: token(48, random),
    services: Object.fromEntries(
      CHARTS.filter((c) => !c.infrastructure).map((c) => [c.chart, { database: token(24, random), messaging: token(24, random), identity: token(24, random) }]),
    ),
  };
}
