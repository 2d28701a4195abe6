// A server built on the official TypeScript SDK's v1 line
// (@modelcontextprotocol/sdk, 1.x), for tests/interop.rs. The v1 line
// predates the 2026-07-28 revision: it has no `subscriptions/listen`, and
// the test shows the error our client gives.
//
//   node typescript_v1_server.cjs http NODE_MODULES    prints "listening on http://127.0.0.1:PORT/mcp"
//   node typescript_v1_server.cjs stdio NODE_MODULES   speaks MCP on stdin and stdout
//
// NODE_MODULES is where .ci/interop-install put the packages
// (target/interop/node/node_modules).
'use strict';

const { createRequire } = require('node:module');
const path = require('node:path');

const [mode, modules] = process.argv.slice(2);
if (!['http', 'stdio'].includes(mode) || !modules) {
    console.error('usage: %s http|stdio NODE_MODULES', path.basename(__filename));
    process.exit(2);
}
const load = createRequire(path.join(modules, 'noop.js'));
const { McpServer } = load('@modelcontextprotocol/sdk/server/mcp.js');

function factory() {
    return new McpServer(
        { name: 'interop-typescript-v1', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } } },
    );
}

if (mode === 'http') {
    const http = require('node:http');
    const { StreamableHTTPServerTransport } = load('@modelcontextprotocol/sdk/server/streamableHttp.js');
    // Stateless: a server and a transport per request, as the SDK's
    // examples do.
    const server = http.createServer(async (req, res) => {
        const chunks = [];
        for await (const chunk of req) chunks.push(chunk);
        const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
        const mcp = factory();
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        res.on('close', () => {
            transport.close();
            mcp.close();
        });
        await mcp.connect(transport);
        await transport.handleRequest(req, res, body);
    });
    server.listen(0, '127.0.0.1', () => {
        const { port } = server.address();
        process.stdout.write(`listening on http://127.0.0.1:${port}/mcp\n`);
    });
} else {
    const { StdioServerTransport } = load('@modelcontextprotocol/sdk/server/stdio.js');
    factory().connect(new StdioServerTransport());
}
