/**
 * List pagination as the real server does it: a continue token carries the first page's
 * resourceVersion and the key to start after (the real encoding: base64url of
 * `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}`), every page is read at that revision, and
 * once the revision is compacted the token answers 410 Expired with a token to continue
 * inconsistently (rv -1: read the current state). The real server's watch cache keeps serving old
 * pages until it restarts; the double behaves like a restarted server after `store.compact()`.
 */
import { HttpError } from './errors';

export interface ContinueToken {
  /** Revision of the first page; -1 for an inconsistent continuation. */
  rv: number;
  /** Smallest key (relative to the listed collection, `/name` or `/ns/name`) of the next page. */
  start: string;
}

export const CONTINUE_EXPIRED_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** A token to continue after `lastKey`. */
export function encodeContinue(rv: number, lastKey: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` })).toString('base64url');
}

export function decodeContinue(token: string, resourceVersion?: string): ContinueToken {
  if (resourceVersion) throw new HttpError(400, 'BadRequest', 'specifying resource version is not allowed when using continue');
  let parsed: { v?: string; rv?: number; start?: string };
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch (err) {
    throw new HttpError(400, 'BadRequest', `invalid continue token: continue key is not valid: ${(err as Error).message}`);
  }
  if (parsed.v !== 'meta.k8s.io/v1' || typeof parsed.rv !== 'number' || typeof parsed.start !== 'string') {
    throw new HttpError(
      400,
      'BadRequest',
      `invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version ${parsed.v})`,
    );
  }
  return { rv: parsed.rv, start: parsed.start };
}

/** The 410 for a token whose revision is compacted, carrying the inconsistent continuation. */
export function continueExpired(token: ContinueToken): HttpError {
  return new HttpError(410, 'Expired', CONTINUE_EXPIRED_MESSAGE, undefined, {
    continue: Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: -1, start: token.start })).toString('base64url'),
  });
}
