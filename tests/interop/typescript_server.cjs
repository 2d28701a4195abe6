// A server built on the official TypeScript SDK's v2 line
// (@modelcontextprotocol/server), serving `subscriptions/listen` with the
// SDK's own handler, for tests/interop.rs.
//
//   node typescript_server.cjs http NODE_MODULES    prints "listening on http://127.0.0.1:PORT/mcp"
//   node typescript_server.cjs stdio NODE_MODULES   speaks MCP on stdin and stdout
//
// Every 50 ms it publishes notifications/tools/list_changed and a
// notifications/resources/updated for file:///a and for file:///b, so a
// listener sees both kinds, and only the URIs it asked for.
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
const { McpServer, createMcpHandler } = load('@modelcontextprotocol/server');

const PERIOD_MS = 50;

function factory() {
    return new McpServer(
        { name: 'interop-typescript', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } } },
    );
}

if (mode === 'http') {
    const http = require('node:http');
    const { toNodeHandler } = load('@modelcontextprotocol/node');
    const handler = createMcpHandler(factory, { legacy: 'reject' });
    const server = http.createServer(toNodeHandler(handler));
    server.listen(0, '127.0.0.1', () => {
        const { port } = server.address();
        process.stdout.write(`listening on http://127.0.0.1:${port}/mcp\n`);
    });
    setInterval(() => {
        handler.notify.toolsChanged();
        handler.notify.resourceUpdated('file:///a');
        handler.notify.resourceUpdated('file:///b');
    }, PERIOD_MS);
} else {
    const { serveStdio } = load('@modelcontextprotocol/server/stdio');
    // One instance per connection; its outbound change notifications are
    // routed onto the connection's listen streams by the SDK.
    const instances = [];
    serveStdio(() => {
        const server = factory();
        instances.push(server);
        return server;
    });
    setInterval(() => {
        for (const server of instances) {
            server.server.sendToolListChanged().catch(() => {});
            server.server.sendResourceUpdated({ uri: 'file:///a' }).catch(() => {});
            server.server.sendResourceUpdated({ uri: 'file:///b' }).catch(() => {});
        }
    }, PERIOD_MS);
    process.stdin.on('end', () => process.exit(0));
}
