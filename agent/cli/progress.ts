import cliProgress from 'cli-progress';

/**
 * Byte progress for long transfers: a bar with rate and ETA on a terminal,
 * a plain line every few seconds otherwise (logs, CI), nothing with --quiet.
 */
export interface Progress {
  update(bytes: number, total: number): void;
  stop(): void;
}

function mib(n: number): string {
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function byteProgress(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label} [{bar}] {percentage}% | {done} / {all} | {rate} | ETA {eta_formatted}`,
        stream,
        hideCursor: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    const started = Date.now();
    let running = false;
    return {
      update(bytes, total) {
        const rate = `${mib(bytes / Math.max((Date.now() - started) / 1000, 0.001))}/s`;
        if (!running) {
          bar.start(total, bytes, { done: mib(bytes), all: mib(total), rate });
          running = true;
        } else bar.update(bytes, { done: mib(bytes), all: mib(total), rate });
        bar.setTotal(total);
      },
      stop() {
        if (running) bar.stop();
      },
    };
  }
  let last = 0;
  const started = Date.now();
  return {
    update(bytes, total) {
      const now = Date.now();
      if (now - last < 5000 && bytes < total) return;
      last = now;
      const secs = Math.max((now - started) / 1000, 0.001);
      stream.write(`${label}: ${mib(bytes)} of ${mib(total)} (${mib(bytes / secs)}/s)\n`);
    },
    stop() {
      // plain lines need no cleanup
    },
  };
}
