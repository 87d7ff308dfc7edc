import { ValidationError } from '../../lib/model/errors';

/**
 * Bad props are expected errors: Pulumi should print their message, not "Unhandled exception" and a
 * stack trace. It prints a RunError that way and recognizes one by a true `__pulumiRunError` member
 * (`RunError.isInstance`), so every ValidationError carries it in a Pulumi program. The class stays
 * ours: callers still catch `ValidationError` and read its `issues`.
 */
Object.defineProperty(ValidationError.prototype, '__pulumiRunError', { value: true });
