import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Work that must be done just before a write request leaves for OpenStack, set for an async context:
 * the create journal records a create here, after the token, the first-call gate and any queue, so a
 * process killed while waiting leaves no record of a request it never sent. GETs and HEADs skip it.
 */
export const beforeWrite = new AsyncLocalStorage<() => Promise<void>>();
