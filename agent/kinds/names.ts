export { uuid5 } from '../util/uuid5.ts';

/** `namespace/Kind/name` of the manifest a marker ref belongs to, in the adapter's project. */
export function addressOfRef(namespace: string, ref: string): string {
  return `${namespace}/${ref}`;
}
