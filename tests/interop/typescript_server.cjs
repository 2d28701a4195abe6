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
// Its tool list changes at runtime, as the live catalog's tests drive it:
// test_add_tool {name, description}, test_edit_tool {name, description} and
// test_remove_tool {name} add, describe anew and remove a tool that answers
// with its name, each publishing the tools list change.
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
const { McpServer, createMcpHandler, fromJsonSchema } = load('@modelcontextprotocol/server');

const PERIOD_MS = 50;

// The tools added at runtime, by name: their descriptions.
const added = new Map();
// Called after each change: tells every listener the list changed.
let toolsChanged = () => {};

const text = (value) => ({ content: [{ type: 'text', text: value }] });
const named = fromJsonSchema({
    type: 'object',
    properties: { name: { type: 'string' }, description: { type: 'string' } },
    required: ['name'],
});

// Registers the changing tools on `server`, and one tool per entry of
// `added`; the handles of the latter, by name.
function install(server) {
    const change = (apply) => async ({ name, description }) => {
        apply(name, description);
        toolsChanged();
        return text(name);
    };
    const put = (name, description) => added.set(name, description || '');
    server.registerTool('test_add_tool', { description: 'Add a tool', inputSchema: named }, change(put));
    server.registerTool('test_edit_tool', { description: 'Describe a tool anew', inputSchema: named }, change(put));
    server.registerTool(
        'test_remove_tool',
        { description: 'Remove a tool', inputSchema: named },
        change((name) => added.delete(name)),
    );
    const handles = new Map();
    for (const [name, description] of added) {
        handles.set(name, server.registerTool(name, { description }, async () => text(`${name} called`)));
    }
    return handles;
}

function factory() {
    const server = new McpServer(
        { name: 'interop-typescript', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } } },
    );
    server.handles = install(server);
    return server;
}

// A connected server's tools made to match `added` (over stdio, where one
// instance serves the whole connection).
function sync(server) {
    for (const [name, handle] of server.handles) {
        if (!added.has(name)) {
            handle.remove();
            server.handles.delete(name);
        }
    }
    for (const [name, description] of added) {
        const handle = server.handles.get(name);
        if (!handle) {
            server.handles.set(name, server.registerTool(name, { description }, async () => text(`${name} called`)));
        } else if (handle.description !== description) {
            handle.update({ description });
        }
    }
}

if (mode === 'http') {
    const http = require('node:http');
    const { toNodeHandler } = load('@modelcontextprotocol/node');
    const handler = createMcpHandler(factory, { legacy: 'reject' });
    // Each request gets a fresh instance that lists `added` as it is.
    toolsChanged = () => handler.notify.toolsChanged();
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
    toolsChanged = () => {
        for (const server of instances) {
            sync(server);
            server.server.sendToolListChanged().catch(() => {});
        }
    };
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
