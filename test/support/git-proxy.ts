import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A throwaway HTTP relay in front of the test bed's Git server, started and
 * stopped by the test: it counts the requests that really reach the server
 * and lets a test take the server away (and bring it back on the same port).
 */
export class GitProxy {
  readonly target: URL;
  requests: { method: string; path: string }[] = [];
  /** Holds every POST (the pack transfer) this long before relaying it: a slow server. */
  postDelayMs = 0;
  #server: Server | undefined;
  #sockets = new Set<Socket>();
  #port = 0;

  constructor(target: string) {
    this.target = new URL(target);
  }

  /** Base URL of the relay, e.g. http://127.0.0.1:PORT/git (the same path as the target). */
  get url(): string {
    return `http://127.0.0.1:${this.#port}${this.target.pathname.replace(/\/$/, '')}`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.requests.push({ method: req.method ?? 'GET', path: req.url ?? '' });
      const delay = req.method === 'POST' ? this.postDelayMs : 0;
      if (delay > 0) {
        req.pause();
        setTimeout(() => relay(req, res), delay);
      } else relay(req, res);
    });
    const relay = (req: IncomingMessage, res: ServerResponse): void => {
      const upstream = request({ host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: { ...req.headers, host: this.target.host } }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
      req.resume();
    };
    server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Closes the port and every open connection: the server is gone. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
