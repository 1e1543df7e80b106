import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { answers200, ensurePeers } from '../deferred.ts';

/** The signing peers as tests see them (test/testbed/signing/up.sh; versions in versions.sh). */
const cache = process.env.KUPENSTACK_TESTBED_CACHE ?? '/var/cache/kupenstack-testbed';

export const signing = {
  /** The real cosign, built from the Go module proxy. */
  cosign: join(cache, 'cosign-v3.1.3', 'bin', 'cosign'),
  /** An OCI 1.1 registry with the referrers API (in memory, anonymous, plain HTTP). */
  referrersRegistry: '127.0.0.1:5060',
} as const;

// cosign takes ~25 min to build cold: deferred by the suite's global setup, started here.
await ensurePeers(['signing'], async () => existsSync(signing.cosign) && (await answers200(`http://${signing.referrersRegistry}/v2/`)));
