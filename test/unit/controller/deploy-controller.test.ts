import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { controllerCommand } from '../../../agent/cli/controller.ts';
import { validateNamespace } from '../../../agent/controller/resources/validate-namespace.ts';
import { documentsOf } from '../../../agent/controller/resources/revision.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';

/** deploy/controller must stay in step with the controller it runs and with `kupenstack validate`. */
const dir = join(import.meta.dirname, '../../../deploy/controller');
type Doc = { kind: string; metadata: { name: string }; spec: Record<string, unknown>; resources?: string[] };
const docs = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Doc));
const byKind = (kind: string): Doc => docs.find((d) => d.kind === kind)!;

describe('deploy/controller', () => {
  it('lists every manifest in the kustomization', () => {
    expect(byKind('Kustomization').resources!.sort()).toEqual(readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort());
  });

  it('runs `kupenstack controller` with flags it has, as deploy/rbac\'s ServiceAccount', () => {
    const pod = (byKind('Deployment').spec as { template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } }).template.spec;
    const rbac = readFileSync(join(import.meta.dirname, '../../../deploy/rbac/controller.yaml'), 'utf8');
    expect(rbac).toContain(`name: ${pod.serviceAccountName}`);
    const args = pod.containers[0]!.args;
    expect(args[0]).toBe('controller');
    const known = new Set(controllerCommand().options.map((o) => o.long));
    const flags = args.filter((a) => a.startsWith('--'));
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) expect(known.has(flag), flag).toBe(true);
  });

  it('refuses at admission what `kupenstack validate` reports with the same code', () => {
    const policy = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy' && d.metadata.name === 'kupenstack-subnet-addresses')!.spec as { validations: { messageExpression: string }[] };
    const codes = policy.validations.map((v) => /\[([a-z.-]+)\]/.exec(v.messageExpression)?.[1]);
    expect(codes).toEqual(['subnet.gateway-outside', 'subnet.pool-outside']);
    const subnet = (spec: Record<string, unknown>) => ({ kind: 'Subnet', object: { metadata: { name: 's', namespace: 'n' }, spec: { networkRef: { name: 'net' }, ...spec } } });
    const net = { kind: 'Network', object: { metadata: { name: 'net', namespace: 'n' }, spec: {} } };
    const registry = loadSchemaRegistry();
    const codeOf = (spec: Record<string, unknown>): string[] => [...validateNamespace(documentsOf([net, subnet(spec)]), registry).rejected.values()].flat().map((d) => d.code);
    expect(codeOf({ cidr: '10.0.0.0/24', gatewayIP: '10.9.0.1' })).toEqual(['subnet.gateway-outside']);
    expect(codeOf({ cidr: '10.0.0.0/24', allocationPools: [{ start: '10.0.1.10', end: '10.0.1.20' }] })).toContain('subnet.pool-outside');
  });
});
