/**
 * Whose Images may pull with the agent's own registry credentials (its
 * docker config: `$DOCKER_CONFIG/config.json` in the controller's pod). A
 * tenant that names a private repository must not borrow the identity the
 * operator gave the agent: in a tenant namespace an Image without
 * `credentialsSecretRef` pulls anonymously, unless the cluster admin lists
 * the registry (`--agent-credentials-registry`, Helm
 * `registryCredentials.agentCredentialsRegistries`). Admin namespaces
 * (kupenstack.io/admin=true) keep them. Not configured (the standalone agent
 * and the CLI, run by the operator with their own config): every Image
 * may use them, as before.
 */
export interface AgentCredentialsPolicy {
  /** Whether the namespace is an admin one (the member policy's label, as the controller's watch has it). */
  isAdmin: (namespace: string) => boolean;
  /** `host[:port]` of registries every namespace's Images may pull from with the agent's credentials. */
  registries: string[];
}

let configured: AgentCredentialsPolicy | undefined;

/** Set once by the command that runs the agent; undefined: no restriction. */
export function configureAgentCredentials(c: AgentCredentialsPolicy | undefined): void {
  configured = c;
}

/** Whether an Image of `namespace` without credentialsSecretRef may use the agent's credentials for `registry` (`host[:port]`). */
export function mayUseAgentCredentials(namespace: string, registry: string): boolean {
  if (!configured) return true;
  if (configured.isAdmin(namespace)) return true;
  const r = registry.toLowerCase();
  return configured.registries.some((listed) => listed.toLowerCase() === r);
}

/** The line a process logs when it configures the policy. */
export function describeAgentCredentials(c: AgentCredentialsPolicy): string {
  return c.registries.length > 0
    ? `registry credentials: the agent's own for admin namespaces, and for every namespace on ${c.registries.join(', ')}; otherwise anonymous unless an Image names credentialsSecretRef`
    : "registry credentials: the agent's own for admin namespaces only; a tenant's Image is anonymous unless it names credentialsSecretRef";
}
