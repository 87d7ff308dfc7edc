import { ValidationError } from '../../lib/model/errors';

/**
 * The messages of the ValidationError that `fn` throws, or [] when it throws none. Any other error
 * propagates, so a crash never passes for a validation failure.
 */
export function issueMessages(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof ValidationError) return e.issues.map((i) => i.message);
    throw e;
  }
  return [];
}
