/** Bounds that keep a hostile or broken revision from exhausting the agent. */
export interface LoadLimits {
  /** A single manifest file; Kubernetes itself refuses objects over ~1.5 MiB. */
  maxFileBytes: number;
  /** Everything loaded from one revision. */
  maxRevisionBytes: number;
}

export const defaultLimits: LoadLimits = {
  maxFileBytes: 1024 * 1024,
  maxRevisionBytes: 64 * 1024 * 1024,
};
