/**
 * The naming rule of `kupenstack export` (README, "Taking over an existing
 * cloud"): an OpenStack name becomes a manifest name by lower-casing it and
 * turning every run of characters Kubernetes does not allow into one `-`;
 * an empty result is `<kind>-<first 8 characters of the id>`, and a name
 * already taken in the namespace gets `-<first 8 characters of the id>`.
 */
export function manifestName(kind: string, openstackName: unknown, id: string, taken: Set<string>): string {
  const base = dnsName(typeof openstackName === 'string' ? openstackName : '', 63) || `${kind.toLowerCase()}-${shortId(id)}`;
  let name = base;
  if (taken.has(name)) name = `${base.slice(0, 54)}-${shortId(id)}`;
  taken.add(name);
  return name;
}

/** A namespace: the project's name without the prefix projects get (config `projectPrefix`), made a DNS label. */
export function namespaceName(projectName: string, prefix: string): string | undefined {
  const bare = prefix !== '' && projectName.startsWith(prefix) ? projectName.slice(prefix.length) : projectName;
  const ns = dnsName(bare, 63).replace(/\./g, '-');
  return ns === '' ? undefined : ns;
}

function dnsName(text: string, max: number): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, max)
    .replace(/[^a-z0-9]+$/, '');
}

function shortId(id: string): string {
  return id
    .replace(/[^a-z0-9]/gi, '')
    .slice(0, 8)
    .toLowerCase();
}
