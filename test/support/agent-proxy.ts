import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP relay in front of the test bed's Git server, so a test can make the
 * server unreachable (close the port) and bring it back (listen again on the
 * same port) without touching the shared peer.
 */
export class GitRelay {
  readonly port: number;
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  private constructor(port: number) {
    this.port = port;
  }

  static async start(port: number): Promise<GitRelay> {
    const relay = new GitRelay(port);
    await relay.up();
    return relay;
  }

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(8180, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.server = server;
  }

  /** Closes the port and cuts every open connection: connection refused from now on. */
  async down(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
