/** RFC 1123 DNS label (the schemas' `dnsLabel`): Sync names and owners go into OpenStack tags and Kubernetes names. */
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isDnsLabel(text: string, maxLength = 63): boolean {
  return text.length <= maxLength && dnsLabel.test(text);
}
