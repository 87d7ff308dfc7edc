/** API group and version of the tensor-fusion.ai custom resources. */
export const GROUP = 'tensor-fusion.ai';
export const VERSION = 'v1';
export const API_VERSION = `${GROUP}/${VERSION}`;
