/** API group of the tensor-fusion.ai custom resources. */
export const GROUP = 'tensor-fusion.ai';
/** API version of the tensor-fusion.ai custom resources. */
export const VERSION = 'v1';
/** `apiVersion` of the tensor-fusion.ai custom resources: `tensor-fusion.ai/v1`. */
export const API_VERSION = `${GROUP}/${VERSION}`;
