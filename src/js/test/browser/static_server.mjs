// A static HTTP server on 127.0.0.1 for the browser page: /dist/ is the
// compiled client, /page/ this folder, /support/ the tests' shared plain
// modules. Serves files only from those roots (no `..` escapes).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const roots = {
  dist: resolve(here, '../../dist'),
  page: here,
  support: resolve(here, '../support'),
};
const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.html': 'text/html', '.map': 'application/json' };

/** Listens on 127.0.0.1:`port` (0: any free port); resolves with {url, close()}. */
export function startStaticServer(port = 0) {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const [, top, ...rest] = path.split('/');
    const root = roots[top];
    const file = root && normalize(join(root, ...rest));
    if (!file || !file.startsWith(root + sep)) {
      res.writeHead(404).end('not found');
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => {
      ok({
        url: `http://127.0.0.1:${server.address().port}`,
        close: () =>
          new Promise((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
