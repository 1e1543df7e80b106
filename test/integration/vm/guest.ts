import { setTimeout as sleep } from 'node:timers/promises';

/** The test image's responder (test/testbed/vm-image/init.sh): HTTP on this port of the guest. */
export const PORT = 8080;

/** Polls until probe gives a value; a real boot under TCG takes tens of seconds, so the caller names the bound. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 2000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The responder's answer on ip:8080, or undefined when the connection fails or times out. */
export async function answer(ip: string): Promise<string | undefined> {
  try {
    const res = await fetch(`http://${ip}:${PORT}/`, { signal: AbortSignal.timeout(3000) });
    return res.ok ? await res.text() : undefined;
  } catch {
    return undefined;
  }
}
