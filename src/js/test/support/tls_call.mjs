// One client over wss:// in its own process, so that the runtime reads
// NODE_EXTRA_CA_CERTS at start as an application's would:
//   node|bun tls_call.mjs URL USER SECRET
// Prints the value read back, or "error <code>: <message>" and exits 1.
import { Client } from '../../dist/node.js';

const [url, user, secret] = process.argv.slice(2);
try {
  const db = await Client.connect({ url, user, secret, reconnect: false });
  await db.set('notes', 'tls', { over: 'wss' });
  console.log(JSON.stringify(await db.get('notes', 'tls')));
  await db.close();
} catch (e) {
  console.log(`error ${e.code}: ${e.message}`);
  process.exit(1);
}
