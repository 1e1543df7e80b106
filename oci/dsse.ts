import { parseDigest } from './digest.ts';
import { OciError } from './errors.ts';

/**
 * DSSE envelopes and the in-toto statements they carry, as `cosign attest`
 * writes them: parsed and bounded here, verified in attestation-verify.ts.
 * Nothing read here is trusted before its signature is checked.
 */

export interface Envelope {
  payloadType: string;
  payload: Buffer;
  signatures: Array<{ keyid: string; sig: Buffer }>;
}

export interface Statement {
  predicateType: string;
  /** The sha256 hex digests of the statement's subjects. */
  subjects: string[];
  predicate: unknown;
}

export const inTotoPayloadType = 'application/vnd.in-toto+json';
const statementTypes = new Set(['https://in-toto.io/Statement/v0.1', 'https://in-toto.io/Statement/v1']);

/** A DSSE envelope as JSON (the classic `.att` layer): payload and signatures base64. Throws `oci.format` with the reason. */
export function parseEnvelope(json: unknown): Envelope {
  const e = json as { payloadType?: unknown; payload?: unknown; signatures?: unknown };
  if (typeof e !== 'object' || e === null || typeof e.payloadType !== 'string' || typeof e.payload !== 'string' || !Array.isArray(e.signatures))
    throw new OciError('oci.format', 'not a DSSE envelope (payloadType, payload, signatures)');
  const signatures = (e.signatures as Array<{ keyid?: unknown; sig?: unknown }>).flatMap((s) =>
    typeof s?.sig === 'string' ? [{ keyid: typeof s.keyid === 'string' ? s.keyid : '', sig: Buffer.from(s.sig, 'base64') }] : [],
  );
  if (signatures.length === 0) throw new OciError('oci.format', 'a DSSE envelope without a signature');
  return { payloadType: e.payloadType, payload: Buffer.from(e.payload, 'base64'), signatures };
}

/** DSSE's pre-authentication encoding: what the signature is over (the type is bound, so a payload cannot be read as another type). */
export function pae(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}

/** The in-toto statement of a payload. Throws `oci.format` with the reason. */
export function parseStatement(payloadType: string, payload: Buffer): Statement {
  if (payloadType !== inTotoPayloadType) throw new OciError('oci.format', `the envelope carries ${payloadType}, not an in-toto statement`);
  let doc: { _type?: unknown; predicateType?: unknown; subject?: unknown; predicate?: unknown };
  try {
    doc = JSON.parse(payload.toString('utf8')) as typeof doc;
  } catch {
    throw new OciError('oci.format', 'the in-toto statement is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || !statementTypes.has(String(doc._type)))
    throw new OciError('oci.format', `not an in-toto statement (_type ${String((doc as { _type?: unknown } | null)?._type)})`);
  if (typeof doc.predicateType !== 'string') throw new OciError('oci.format', 'the in-toto statement has no predicateType');
  const subjects = (Array.isArray(doc.subject) ? (doc.subject as Array<{ digest?: Record<string, unknown> }>) : [])
    .map((s) => s?.digest?.sha256)
    .filter((h): h is string => typeof h === 'string');
  return { predicateType: doc.predicateType, subjects, predicate: doc.predicate };
}

/** Why the statement is not about `digest` (its subjects name other images), or undefined when it is. */
export function subjectMismatch(statement: Statement, digest: string): string | undefined {
  if (statement.subjects.includes(parseDigest(digest).hex)) return undefined;
  const named = statement.subjects.map((h) => `sha256:${h}`).join(', ') || 'no image digest';
  return `the attestation is for ${named}, not ${digest} (an attestation copied from another image)`;
}
