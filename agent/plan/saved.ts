import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { ObservedState } from './observed.ts';
import { KupenstackError } from '../errors.ts';
import { stableJson } from '../ownership/marker.ts';
import { schemasDir } from '../paths.ts';
import type { Plan } from './plan.ts';
import type { JsonPlan } from './render/json.ts';

/**
 * A plan saved by `plan --save FILE` for `apply --plan FILE` (Terraform's
 * `plan -out`): the rendered plan plus everything needed to tell whether it
 * still holds — which manifests (content revision), which cloud and owner,
 * and a hash of every object it was compared with. No credentials.
 */
export interface SavedPlan {
  apiVersion: 'kupenstack.io/v1alpha1';
  kind: 'SavedPlan';
  createdAt: string;
  /** The manifests' folder as given to plan. */
  path: string;
  cloud: string;
  owner: string;
  prune: boolean;
  observed: ObservedState;
  plan: JsonPlan;
}

export class SavedPlanError extends KupenstackError {
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super('plan.saved', `${file}: ${message}`, options);
  }
}

export async function writeSavedPlan(file: string, saved: SavedPlan): Promise<void> {
  await writeFile(file, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600 });
}

export async function readSavedPlan(file: string): Promise<SavedPlan> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new SavedPlanError(
      file,
      `cannot read the saved plan (${err instanceof Error ? err.message : String(err)}); write one with kupenstack plan --save FILE`,
      { cause: err },
    );
  }
  const p = raw as Partial<SavedPlan> | null;
  if (!p || typeof p !== 'object' || p.kind !== 'SavedPlan' || p.apiVersion !== 'kupenstack.io/v1alpha1')
    throw new SavedPlanError(file, 'not a saved plan (kind SavedPlan, apiVersion kupenstack.io/v1alpha1); write one with kupenstack plan --save FILE');
  for (const key of ['path', 'cloud', 'owner'] as const)
    if (typeof p[key] !== 'string') throw new SavedPlanError(file, `"${key}" is missing; the file is damaged: plan again`);
  if (
    typeof p.prune !== 'boolean' ||
    !p.observed ||
    typeof p.observed !== 'object' ||
    !p.plan ||
    typeof p.plan.revision !== 'string' ||
    !Array.isArray(p.plan.changes)
  )
    throw new SavedPlanError(file, 'the file is damaged (prune, observed or plan missing): plan again');
  const validate = planValidator();
  if (!validate(p.plan)) {
    const first = validate.errors?.[0];
    throw new SavedPlanError(
      file,
      `the plan inside does not match schemas/plan.schema.json (${first ? `${first.instancePath || '/'} ${first.message ?? ''}` : 'invalid'}); the file is damaged: plan again`,
    );
  }
  return p as SavedPlan;
}

let compiled: ValidateFunction | undefined;

/** schemas/plan.schema.json, the one description of a plan document, compiled once. */
function planValidator(): ValidateFunction {
  compiled ??= new Ajv2020({ allErrors: false, strictSchema: true, strictTypes: false }).compile(
    JSON.parse(readFileSync(join(schemasDir, 'plan.schema.json'), 'utf8')) as Record<string, unknown>,
  );
  return compiled;
}

/** A change as apply would make it, for comparing a saved plan with a fresh one. */
function changeKeys(plan: JsonPlan): string[] {
  return plan.changes.map((c) => `${c.action} ${c.address} ${stableJson(c.fields)}`).sort();
}

/** What differs between the changes of two plans, in words. */
export function compareChanges(saved: JsonPlan, now: JsonPlan): string[] {
  const a = new Set(changeKeys(saved));
  const b = new Set(changeKeys(now));
  const out: string[] = [];
  const head = (k: string): string => k.split(' ').slice(0, 2).join(' ');
  for (const k of a) if (!b.has(k)) out.push(`planned "${head(k)}" is no longer what apply would do`);
  for (const k of b) if (!a.has(k)) out.push(`apply would now "${head(k)}", which the plan does not show`);
  return out;
}

/** A saved plan's JSON back as a Plan (what apply compares its fresh decision with). */
export function planFromJson(j: JsonPlan): Plan {
  return {
    revision: j.revision,
    against: j.against,
    summary: j.summary,
    changes: j.changes.map((c) => {
      const [namespace = '', kind = '', name = ''] = c.address.split('/');
      return { address: c.address, kind, namespace, name, action: c.action, fields: c.fields, destructive: c.destructive, reasons: c.reasons };
    }),
    drift: j.drift,
    held: j.held,
    images: j.images.map((i) => ({ address: i.address, reference: i.reference, to: i.to, ...(i.from === null ? {} : { from: i.from }) })),
    warnings: j.warnings,
  };
}
