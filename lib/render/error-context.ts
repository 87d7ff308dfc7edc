/** Puts the caller's name (component and construct path or resource name) on validation messages. */
import { ValidationError } from '../model/errors';

/**
 * Runs `fn`; a ValidationError it throws is rethrown with `context` in front of its issues (in
 * place of the context it had), so every message names the component the user called.
 */
export function withContext<T>(context: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(err.issues, context);
    throw err;
  }
}
