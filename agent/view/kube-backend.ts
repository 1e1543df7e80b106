import type * as k8s from '@kubernetes/client-node';
import type { SchemaRegistry } from '../schema/registry.ts';
import { KubeViewReader } from './kube-reader.ts';
import type { NamespaceHints } from './kube-lists.ts';
import { serveEvents } from './live.ts';
import type { CommitLookup, ViewBackend } from './reader.ts';
import { userKubeConfig, whoIs } from './user-client.ts';

/**
 * The in-cluster view (`kupenstack controller`): a token is checked by
 * asking the API server who it is with that token, and the person's reads
 * and watches are made with a client that carries only it. `base` gives
 * the API server's address and CA, never its credentials.
 */
export function kubeBackend(base: k8s.KubeConfig, registry: SchemaRegistry, hints: NamespaceHints, commits?: CommitLookup): ViewBackend {
  return {
    server: 'controller',
    signIn: async (token) => {
      const kc = userKubeConfig(base, token);
      const who = await whoIs(kc);
      const reader = new KubeViewReader(kc, registry, hints, who.username, commits);
      return { who, view: { reader, events: (req, res, scopes) => serveEvents(req, res, kc, registry, scopes, () => reader.namespaces()) } };
    },
  };
}
