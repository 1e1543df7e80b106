/** The retry loop lives in lib/ so the OCI client (oci/, which must not import agent/) shares it. */
export { backoffDelay, retry, type RetryOptions } from '../../lib/retry.ts';
