/** Field manager for server-side apply by the IaC components and the runtime controller. */
export const FIELD_MANAGER = 'tensor-fusion-iac';
