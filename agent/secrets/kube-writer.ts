import * as k8s from '@kubernetes/client-node';
import { KupenstackError } from '../errors.ts';
import type { SecretPlace, SecretWriter } from './resolver.ts';

/** The label a Secret KupenStack made carries: only those are deleted. */
export const secretOwnerLabel = 'kupenstack.io/owner';
/** On a Secret KupenStack did not make: "true" lets it write a credential's keys into it (whoever may annotate it may write it). */
export const acceptCredentialsAnnotation = 'kupenstack.io/accept-credentials';

/** A Secret could not be written; the API server's reason, never a value. */
export class KubeSecretWriteError extends KupenstackError {
  constructor(what: string, options?: { cause?: unknown }) {
    super('secret.write', what, options);
  }
}

/**
 * The in-cluster SecretWriter: GET, then create or replace with the
 * resourceVersion read (a concurrent writer makes it fail, not lose keys). A
 * Secret that existed before keeps its labels and other keys. Reads go to
 * the API server, not the resolver's watch cache, so a write a moment ago is
 * seen. A Forbidden names the RoleBinding that grants the write.
 */
export class KubeSecretWriter implements SecretWriter {
  private readonly core: k8s.CoreV1Api;
  private readonly authz: k8s.AuthorizationV1Api;

  constructor(kc: k8s.KubeConfig) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.authz = kc.makeApiClient(k8s.AuthorizationV1Api);
  }

  /** A SelfSubjectAccessReview (any authenticated user may ask) for the verb the put will need. */
  async check(place: SecretPlace, owner: string): Promise<void> {
    const before = await this.#get(place);
    if (before) refuseForeign(before, place, owner);
    const verb = before ? 'update' : 'create';
    let allowed: boolean;
    try {
      const review = await this.authz.createSelfSubjectAccessReview({
        body: { spec: { resourceAttributes: { namespace: place.namespace, verb, resource: 'secrets', name: verb === 'update' ? place.name : undefined } } },
      });
      allowed = review.status?.allowed === true;
    } catch (err) {
      throw failed('read', place, err);
    }
    if (!allowed) throw forbidden('write', place);
  }

  async read(place: SecretPlace): Promise<Record<string, string> | undefined> {
    const secret = await this.#get(place);
    return secret ? decode(secret) : undefined;
  }

  async put(place: SecretPlace, data: Record<string, string>, owner: string): Promise<void> {
    const before = await this.#get(place);
    if (before) refuseForeign(before, place, owner);
    const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
    try {
      if (!before) {
        await this.core.createNamespacedSecret({
          namespace: place.namespace,
          body: {
            metadata: { name: place.name, namespace: place.namespace, labels: { [secretOwnerLabel]: owner, 'app.kubernetes.io/managed-by': 'kupenstack' } },
            type: 'Opaque',
            data: encoded,
          },
        });
        return;
      }
      await this.core.replaceNamespacedSecret({ name: place.name, namespace: place.namespace, body: { ...before, data: { ...before.data, ...encoded } } });
    } catch (err) {
      throw failed('write', place, err);
    }
  }

  async owned(place: SecretPlace, owner: string): Promise<boolean> {
    return isOwned(await this.#get(place), owner);
  }

  async removeOwned(place: SecretPlace, owner: string): Promise<void> {
    if (!(await this.owned(place, owner))) return;
    try {
      await this.core.deleteNamespacedSecret({ name: place.name, namespace: place.namespace });
    } catch (err) {
      if (!(err instanceof k8s.ApiException && err.code === 404)) throw failed('delete', place, err);
    }
  }

  async #get(place: SecretPlace): Promise<k8s.V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ name: place.name, namespace: place.namespace });
    } catch (err) {
      if (err instanceof k8s.ApiException && err.code === 404) return undefined;
      throw failed('read', place, err);
    }
  }
}

function isOwned(secret: k8s.V1Secret | undefined, owner: string): boolean {
  return secret?.metadata?.labels?.[secretOwnerLabel] === owner && secret.metadata.annotations?.[acceptCredentialsAnnotation] !== 'true';
}

function decode(secret: k8s.V1Secret): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

/** Status only, and no cause on a write: an Invalid answer may quote what was sent. */
function failed(verb: 'read' | 'write' | 'delete', place: SecretPlace, err: unknown): KubeSecretWriteError {
  const code = err instanceof k8s.ApiException ? err.code : 0;
  const where = `Secret ${place.namespace}/${place.name}`;
  if (code === 403) return forbidden(verb, place);
  return new KubeSecretWriteError(`cannot ${verb} ${where}${code ? ` (HTTP ${code})` : ''}`, verb === 'write' ? undefined : { cause: err });
}

/**
 * The controller may write Secrets where an admin bound its credentials role, and a tenant who may only write
 * ApplicationCredentials names the Secret: without this, it could have the controller overwrite keys of any Secret there.
 */
function refuseForeign(secret: k8s.V1Secret, place: SecretPlace, owner: string): void {
  if (secret.metadata?.labels?.[secretOwnerLabel] === owner || secret.metadata?.annotations?.[acceptCredentialsAnnotation] === 'true') return;
  throw new KubeSecretWriteError(
    `Secret ${place.namespace}/${place.name} exists and KupenStack did not make it: name a Secret that does not exist yet in secretRef, ` +
      `or let the controller write the credential's keys into this one: kubectl annotate secret ${place.name} -n ${place.namespace} ${acceptCredentialsAnnotation}=true`,
  );
}

function forbidden(verb: 'read' | 'write' | 'delete', place: SecretPlace): KubeSecretWriteError {
  const where = `Secret ${place.namespace}/${place.name}`;
  return new KubeSecretWriteError(
    `the controller may not ${verb} ${where}: bind the ClusterRole kupenstack-controller-credentials to it in namespace ${place.namespace} ` +
      `(kubectl create rolebinding kupenstack-credentials -n ${place.namespace} --clusterrole kupenstack-controller-credentials --serviceaccount kupenstack-system:kupenstack-controller)`,
  );
}
