import { access } from 'node:fs/promises';

/** Whether a path exists (any type). For checks only: opening the file is the real test. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
