import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { classifyRemoteError, safeCause } from '../../agent/source/git-errors.ts';

const where = 'https://git.example.com/r.git';

function httpError(statusCode: number): Error {
  return Object.assign(new Error(`HTTP Error: ${statusCode}`), { code: 'HttpError', data: { statusCode, response: 'body' } });
}

describe('remote error classification', () => {
  it('sorts server answers and network errors into auth and unreachable', () => {
    expect(classifyRemoteError(httpError(401), where)?.failure).toBe('auth');
    expect(classifyRemoteError(httpError(403), where)?.failure).toBe('auth');
    expect(classifyRemoteError(httpError(503), where)?.failure).toBe('unreachable');
    expect(classifyRemoteError(httpError(404), where)?.message).toMatch(/no repository at/);
    expect(classifyRemoteError(httpError(302), where)?.message).toMatch(/redirects .* Use the repository's final URL/);
    expect(classifyRemoteError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), where)?.failure).toBe('unreachable');
    expect(classifyRemoteError(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ENOTFOUND' }) }), where)?.message).toMatch(/ENOTFOUND/);
    expect(classifyRemoteError(Object.assign(new Error('self signed'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' }), where)?.message).toMatch(/not trusted/);
    expect(classifyRemoteError(new TypeError('x is undefined'), where)).toBeUndefined();
    const aborted = AbortSignal.abort(new DOMException('t', 'TimeoutError'));
    expect(classifyRemoteError(new Error('any'), where, aborted)?.message).toMatch(/stopped before it finished \(timed out\)/);
  });

  it('keeps only name, code and a redacted message of the library error as the cause', () => {
    const original = Object.assign(new Error('GET https://bot:pw-123@host/r.git failed'), { code: 'ECONNRESET', options: { headers: { Authorization: 'Basic c2VjcmV0' } } });
    const cause = safeCause(original);
    const shown = inspect(cause, { depth: 5 }) + JSON.stringify(cause);
    expect(shown).not.toContain('pw-123');
    expect(shown).not.toContain('c2VjcmV0');
    expect((cause as Error & { code?: string }).code).toBe('ECONNRESET');
  });
});
