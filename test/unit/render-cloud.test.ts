import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import type { CloudPlan } from '../../agent/cloud/plan.ts';
import { summarize, type Plan } from '../../agent/plan/plan.ts';
import { renderJson } from '../../agent/plan/render/json.ts';
import { renderMarkdown } from '../../agent/plan/render/markdown.ts';
import { renderText } from '../../agent/plan/render/text.ts';

/**
 * The OpenStackCloud's part of a plan (Plan.cloud) in the three formats: the Kubernetes objects its charts would change,
 * by chart, and the steps in order. The text is the section `kupenstack plan` printed after the plan before it was data.
 */
const cloud: CloudPlan = {
  cloud: 'cloud',
  namespace: 'openstack',
  changes: [
    { chart: 'keystone', kind: 'Deployment', name: 'keystone-api', action: 'update', fields: ['spec.replicas'], images: [] },
    { chart: 'glance', kind: 'Deployment', name: 'glance-api', action: 'update', fields: ['spec.template'], images: [{ container: 'glance-api', from: 'glance:2025.1', to: 'glance:2025.2' }] },
    { chart: 'glance', kind: 'Job', name: 'glance-db-sync', action: 'replace' },
    { chart: '', kind: 'Deployment', name: 'horizon-server', action: 'delete' },
  ],
  steps: ['upgrade 2025.1 → 2025.2', 'maintenance window: none (any time)', 'backup: Job mariadb-backup-before-2025-2 runs to completion first', '4. keystone: configuration'],
};
const plan: Plan = { revision: 'b7e1c0d', against: 'main (a1b2c3d)', summary: summarize([]), changes: [], drift: [], held: [], images: [], warnings: [], cloud };

describe('the cloud part of a plan', () => {
  it('text: after the plan, the object changes by chart (images on their own lines), then the steps', () => {
    const text = renderText(plan, { color: false });
    expect(text.endsWith([
      '',
      'OpenStackCloud cloud (Kubernetes namespace openstack): 4 object changes',
      '  chart keystone:',
      '    update Deployment/keystone-api [keystone]: spec.replicas',
      '  chart glance:',
      '    update Deployment/glance-api [glance]: spec.template',
      '        image glance-api: glance:2025.1 → glance:2025.2',
      '    replace Job/glance-db-sync [glance]',
      '  chart (pruned):',
      '    delete Deployment/horizon-server',
      '  steps, in order:',
      '    upgrade 2025.1 → 2025.2',
      '    maintenance window: none (any time)',
      '    backup: Job mariadb-backup-before-2025-2 runs to completion first',
      '    4. keystone: configuration',
      '',
    ].join('\n')), text).toBe(true);
    expect(renderText({ ...plan, cloud: { cloud: 'cloud', changes: [], steps: ['1:apply [mariadb] 3 objects'] } }, { color: false })).toMatch(/\n\nOpenStackCloud cloud: no changes\n$/);
  });

  it('json: a `cloud` key the plan schema describes', () => {
    const doc = JSON.parse(renderJson(plan)) as { cloud: CloudPlan };
    expect(doc.cloud).toEqual(cloud);
    const schema = JSON.parse(readFileSync('schemas/plan.schema.json', 'utf8')) as Record<string, unknown>;
    const validate = new Ajv2020({ allErrors: true, strictSchema: true, strictTypes: true, strictRequired: true }).compile(schema);
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    expect('cloud' in (JSON.parse(renderJson({ ...plan, cloud: undefined })) as object)).toBe(false);
  });

  it('markdown: a section with the changes by chart in a code block and the steps as a list', () => {
    const md = renderMarkdown(plan);
    expect(md).toContain('#### OpenStackCloud cloud (Kubernetes namespace openstack): 4 object changes');
    expect(md).toContain('```text\nchart keystone:\n  update Deployment/keystone-api [keystone]: spec.replicas\nchart glance:');
    expect(md).toContain('Steps, in order:\n\n- upgrade 2025.1 → 2025.2\n');
  });
});
