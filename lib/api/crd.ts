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

/** A CustomResourceDefinition (apiextensions.k8s.io/v1) as renderCrd writes it. */
export interface CustomResourceDefinition {
  /** Always `apiextensions.k8s.io/v1`. */
  apiVersion: 'apiextensions.k8s.io/v1';
  /** Always `CustomResourceDefinition`. */
  kind: 'CustomResourceDefinition';
  /** The CRD's name. */
  metadata: {
    /** `<plural>.<group>`, e.g. `gpupools.tensor-fusion.ai`. */
    name: string;
  };
  /** What the CRD defines. */
  spec: {
    /** API group: `tensor-fusion.ai`. */
    group: string;
    /** Names of the kind (see {@link KindInfo}). */
    names: {
      /** Kind, e.g. `GPUPool`. */
      kind: string;
      /** Kind of a list, e.g. `GPUPoolList`. */
      listKind: string;
      /** Plural resource name. */
      plural: string;
      /** Singular resource name. */
      singular: string;
      /** Short names for kubectl. */
      shortNames?: string[];
    };
    /** `Cluster` or `Namespaced`. */
    scope: 'Cluster' | 'Namespaced';
    /** The one served and stored version, `v1`. */
    versions: Array<{
      /** Version name. */
      name: string;
      /** Whether the API server serves it. */
      served: boolean;
      /** Whether objects are stored in it. */
      storage: boolean;
      /** Its structural schema. */
      schema: {
        /** The OpenAPI v3 schema of the whole object. */
        openAPIV3Schema: JsonSchema;
      };
      /** The status subresource. */
      subresources: {
        /** Present: status is written through /status. */
        status: Record<string, never>;
      };
      /** Columns of `kubectl get`. */
      additionalPrinterColumns: Array<{
        /** Column header. */
        name: string;
        /** Type of the values. */
        type: string;
        /** JSONPath of the value. */
        jsonPath: string;
        /** 0 shows in `kubectl get`, higher only with `-o wide`. */
        priority?: number;
      }>;
    }>;
  };
}

/** The CRD of one kind, with the status subresource and printer columns. */
export function renderCrd(kind: KindName): CustomResourceDefinition {
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
export function renderCrds(): CustomResourceDefinition[] {
  return KIND_NAMES.map(renderCrd);
}

/**
 * The CRD of one kind.
 * @deprecated Use {@link renderCrd}: builders of Kubernetes objects are named `render*`.
 */
export const buildCrd = renderCrd;

/**
 * The CRDs of every kind.
 * @deprecated Use {@link renderCrds}: builders of Kubernetes objects are named `render*`.
 */
export const buildCrds = renderCrds;

/** File name under crds/ for a CRD, as controller-gen names them: `<group>_<plural>.yaml`. */
export function crdFileName(kind: KindName): string {
  return `${GROUP}_${KINDS[kind].plural}.yaml`;
}

/** YAML text of a CRD as committed under crds/ (stable: the stale-check test compares it byte for byte). */
export function crdYaml(crd: CustomResourceDefinition): string {
  return `---\n${stringify(crd, { lineWidth: 0 })}`;
}
