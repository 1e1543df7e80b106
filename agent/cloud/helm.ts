import { execFile } from 'node:child_process';

/**
 * The helm binary KupenStack renders with (`helm template`, `helm pull` of oci:// charts):
 * KUPENSTACK_HELM, else `helm` on PATH (the container image ships one). Its version is part of
 * the render's identity: a new helm may render differently (genestack's Helm 3.18 regression).
 */
export const helmBinary = (): string => process.env.KUPENSTACK_HELM ?? 'helm';

export interface HelmRun {
  stdout: string;
  stderr: string;
}

/** Runs helm with args (stdin optional); rejects with helm's stderr, which names the template and line. */
export function runHelm(helm: string, args: string[], opts: { input?: string; signal?: AbortSignal; env?: NodeJS.ProcessEnv } = {}): Promise<HelmRun> {
  return new Promise((resolve, reject) => {
    const child = execFile(helm, args, { encoding: 'utf8', maxBuffer: 256 << 20, signal: opts.signal, env: opts.env ?? process.env }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(new Error(stderr.trim() || err.message, { cause: err }), { stderr }));
      else resolve({ stdout, stderr });
    });
    child.stdin?.end(opts.input ?? '');
  });
}
