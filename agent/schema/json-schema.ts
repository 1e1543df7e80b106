/** The subset of JSON Schema (draft 2020-12) our kind schemas use, plus our annotations. */
export interface JsonSchema {
  $schema?: string;
  $id?: string;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  title?: string;
  description?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  default?: unknown;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  not?: JsonSchema;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  /** A number in JSON Schema 2020-12; a boolean modifier of minimum in OpenAPI v3.0 (CRDs). */
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  /** A set: becomes x-kubernetes-list-type: set in the CRD. */
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  'x-kupenstack-scope'?: 'Namespaced' | 'Cluster';
  'x-kupenstack-plural'?: string;
  'x-kupenstack-shortNames'?: string[];
  'x-kupenstack-printerColumns'?: PrinterColumn[];
  'x-kupenstack-ref'?: string;
  /** Kinds whose manifests in the same namespace must be reconciled first, without a reference (a floating IP needs the router interface). */
  'x-kupenstack-after'?: string[];
  /** Narrows x-kupenstack-after to the manifests that reference the same object of this kind (a port waits for the subnets of its own network, not of every network). */
  'x-kupenstack-after-via'?: string;
  /** A reference that must resolve but does not order creation (e.g. a security-group rule naming another group). */
  'x-kupenstack-ref-weak'?: boolean;
  /** A reference that orders the objects but not their kinds (registry.ts RefPath.objectsOnly). */
  'x-kupenstack-ref-objects-only'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  [key: string]: unknown;
}

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
  format?: string;
}
