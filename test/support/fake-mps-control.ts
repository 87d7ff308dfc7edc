/** The fake nvidia-cuda-mps-control (test/support/fake-mps-control.c), built (see built-fake.ts). */
import { builtFake } from './built-fake';

/** Path of the built fake, building it first where the cache has none for this source. */
export function fakeMpsControl(): string {
  return builtFake('fake-mps-control');
}
