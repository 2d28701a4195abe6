// An application on the official TypeScript SDK's v2 client
// (@modelcontextprotocol/client) that listens to the tools list at URL and
// listens again when its stream ends other than gracefully, as the SDK
// tells it to ("Re-listen if you still want events"). Prints one line per
// step: `acknowledged N`, then `closed N HOW` (`remote`, `graceful`).
// Stops after its second acknowledgement.
//
//   node typescript_listen_again.cjs NODE_MODULES URL
'use strict';

const { createRequire } = require('node:module');
const path = require('node:path');

const [modules, url] = process.argv.slice(2);
if (!modules || !url) {
    console.error('usage: %s NODE_MODULES URL', path.basename(__filename));
    process.exit(2);
}
const load = createRequire(path.join(modules, 'noop.js'));
const { Client, StreamableHTTPClientTransport } = load('@modelcontextprotocol/client');

async function main() {
    const client = new Client(
        { name: 'listen-again', version: '1.0.0' },
        // A 2026-07-28 connection, where listen streams are.
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    for (const attempt of [1, 2]) {
        const subscription = await client.listen({ toolsListChanged: true });
        console.log(`acknowledged ${attempt}`);
        if (attempt === 2) {
            await subscription.close();
            break;
        }
        const how = await subscription.closed;
        console.log(`closed ${attempt} ${how}`);
        if (how === 'graceful') {
            break;
        }
    }
    await client.close();
}

main().then(
    () => process.exit(0),
    (err) => {
        console.error(err);
        process.exit(1);
    },
);
