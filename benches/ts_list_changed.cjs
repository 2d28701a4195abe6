// The TypeScript SDK's own list refetching, for the catalog section of
// bench_report: `@modelcontextprotocol/client` with its `listChanged`
// option for tools, connected over Streamable HTTP.
//
//   node ts_list_changed.cjs URL NODE_MODULES LAST_DESCRIPTION
//
// Prints "ready" once connected (the listen acknowledged), then "done"
// when a refreshed list holds a tool described LAST_DESCRIPTION.
'use strict';

const { createRequire } = require('node:module');
const path = require('node:path');

const [url, modules, last] = process.argv.slice(2);
const load = createRequire(path.join(modules, 'noop.js'));
const { Client, StreamableHTTPClientTransport } = load('@modelcontextprotocol/client');

async function main() {
    const client = new Client(
        { name: 'bench-typescript', version: '1.0.0' },
        {
            // A 2026-07-28 connection: discovery, then a listen stream.
            versionNegotiation: { mode: { pin: '2026-07-28' } },
            listChanged: {
                tools: {
                    onChanged: (error, tools) => {
                        if (!error && tools && tools.some((tool) => tool.description === last)) {
                            process.stdout.write('done\n');
                            process.exit(0);
                        }
                    },
                },
            },
        },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    // The listen is opened with the connection; give it its acknowledgement.
    await new Promise((resolve) => setTimeout(resolve, 500));
    process.stdout.write('ready\n');
}

main().catch((error) => {
    process.stdout.write(`failed: ${error}\n`);
    process.exit(1);
});
