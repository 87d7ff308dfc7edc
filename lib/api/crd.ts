/**
 * Pure generation of apiextensions.k8s.io/v1 CustomResourceDefinitions from the kind registry.
 */
import { TSchema } from '@sinclair/typebox';
import { stringify } from 'yaml';
import { GROUP, VERSION } from '../model/group';
import { EXPECTED_KEYWORD } from './common';
import { KIND_NAMES, KINDS, KindName } from './kinds';

/** A JSON schema node as plain data (no TypeBox symbols). */
export type JsonSchema = { [key: string]: unknown };

/**
 * Plain JSON copy of a TypeBox schema: drops TypeBox's symbol keys (JSON.stringify skips them) and,
 * unless `keepHints`, our message hints, which are not CRD keywords.
 */
export function toPlainSchema(schema: TSchema, keepHints = false): JsonSchema {
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === EXPECTED_KEYWORD && !keepHints ? undefined : value));
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[] };
    scope: 'Cluster' | 'Namespaced';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      schema: { openAPIV3Schema: JsonSchema };
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: Array<{ name: string; type: string; jsonPath: string; priority?: number }>;
    }>;
  };
}

/** The CRD of one kind, with the status subresource and printer columns. */
export function buildCrd(kind: KindName): CustomResourceDefinition {
  const info = KINDS[kind];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${info.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: info.kind,
        listKind: info.listKind,
        plural: info.plural,
        singular: info.singular,
        ...(info.shortNames.length > 0 ? { shortNames: [...info.shortNames] } : {}),
      },
      scope: info.scope,
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: toPlainSchema(info.schema) },
          subresources: { status: {} },
          additionalPrinterColumns: info.printerColumns.map((c) => ({ ...c })),
        },
      ],
    },
  };
}

/** The CRDs of every kind, in registry order. */
export function buildCrds(): CustomResourceDefinition[] {
  return KIND_NAMES.map(buildCrd);
}

/** File name under crds/ for a CRD, as controller-gen names them: `<group>_<plural>.yaml`. */
export function crdFileName(kind: KindName): string {
  return `${GROUP}_${KINDS[kind].plural}.yaml`;
}

/** YAML text of a CRD as committed under crds/ (stable: the stale-check test compares it byte for byte). */
export function crdYaml(crd: CustomResourceDefinition): string {
  return `---\n${stringify(crd, { lineWidth: 0 })}`;
}
