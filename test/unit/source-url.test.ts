import { describe, expect, it } from 'vitest';
import { checkGitUrl, redactText, redactUrl } from '../../agent/source/git-url.ts';

describe('Git URL redaction and checks', () => {
  it('removes user names and passwords from URLs and from free text', () => {
    expect(redactUrl('https://bot:s3cr3t@git.example.com/org/repo.git')).toBe('https://git.example.com/org/repo.git');
    expect(redactUrl('https://token@git.example.com/r.git')).toBe('https://git.example.com/r.git');
    expect(redactUrl('http://127.0.0.1:8180/git/x.git')).toBe('http://127.0.0.1:8180/git/x.git');
    expect(redactUrl('not a url://u:p@host/x')).not.toContain('u:p');
    expect(redactText('fetch of https://u:pa55@host/r.git failed; retry http://a@b/c')).toBe('fetch of https://host/r.git failed; retry http://b/c');
  });

  it('accepts http(s) URLs without credentials and says how to fix the others', () => {
    expect(checkGitUrl('https://git.example.com/org/repo.git').host).toBe('git.example.com');
    const withSecret = (): URL => checkGitUrl('https://bot:s3cr3t@git.example.com/org/repo.git');
    expect(withSecret).toThrow(/contains a user name or password; remove them/);
    try {
      withSecret();
    } catch (err) {
      expect(String((err as Error).message)).not.toContain('s3cr3t');
    }
    expect(() => checkGitUrl('ssh://git@git.example.com/org/repo.git')).toThrow(/ssh:\/\/, which this agent does not support yet/);
    expect(() => checkGitUrl('git.example.com:org/repo.git')).toThrow(/must start with https:\/\//);
    expect(() => checkGitUrl('no url')).toThrow(/not a valid URL/);
    expect(() => checkGitUrl('https://h/r.git?x=1')).toThrow(/query or fragment/);
  });
});
