// A client built on the official TypeScript SDK's v1 line
// (@modelcontextprotocol/sdk, 1.x), which negotiates 2025-11-25: updates
// reach it through `resources/subscribe` and notifications on its session.
// It plays one scenario against the example server and prints, one JSON
// line each, what the server advertised and the notifications it got.
//
//   node typescript_v1_client.cjs NODE_MODULES http URL
//   node typescript_v1_client.cjs NODE_MODULES stdio COMMAND ARG...
//
// NODE_MODULES is where .ci/interop-install put the packages
// (target/interop/node/node_modules).
'use strict';

const { createRequire } = require('node:module');
const path = require('node:path');

const [modules, mode, ...target] = process.argv.slice(2);
if (!modules || !['http', 'stdio'].includes(mode) || target.length === 0) {
    console.error('usage: %s NODE_MODULES http URL | stdio COMMAND ARG...', path.basename(__filename));
    process.exit(2);
}
const load = createRequire(path.join(modules, 'noop.js'));
const { Client } = load('@modelcontextprotocol/sdk/client/index.js');
const types = load('@modelcontextprotocol/sdk/types.js');

function transport() {
    if (mode === 'http') {
        const { StreamableHTTPClientTransport } = load('@modelcontextprotocol/sdk/client/streamableHttp.js');
        return new StreamableHTTPClientTransport(new URL(target[0]));
    }
    const { StdioClientTransport } = load('@modelcontextprotocol/sdk/client/stdio.js');
    return new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: 'inherit' });
}

const print = (line) => process.stdout.write(JSON.stringify(line) + '\n');

async function main() {
    const client = new Client({ name: 'interop-typescript-v1-client', version: '1.0.0' });
    const got = [];
    const waiters = [];
    const note = (notification) => {
        got.push(notification);
        waiters.splice(0).forEach((wake) => wake());
    };
    client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) =>
        note({ method: n.method, uri: n.params.uri }),
    );
    client.setNotificationHandler(types.ToolListChangedNotificationSchema, (n) => note({ method: n.method }));
    client.setNotificationHandler(types.PromptListChangedNotificationSchema, (n) => note({ method: n.method }));
    // Resolves once `count` notifications have arrived in all.
    const received = (count) =>
        new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`waited for ${count}, got ${JSON.stringify(got)}`)), 10000);
            const check = () => (got.length >= count ? (clearTimeout(timer), resolve()) : waiters.push(check));
            check();
        });
    const call = (name, args = {}) => client.callTool({ name, arguments: args });

    await client.connect(transport());
    print({ capabilities: client.getServerCapabilities() });

    await client.subscribeResource({ uri: 'file:///watched.txt' });
    await call('test_trigger_resource_update', { uri: 'file:///watched.txt' });
    await call('test_trigger_resource_update', { uri: 'file:///other.txt' });
    await call('test_trigger_tool_change');
    await received(2);
    await client.unsubscribeResource({ uri: 'file:///watched.txt' });
    await call('test_trigger_resource_update', { uri: 'file:///watched.txt' });
    await call('test_trigger_prompt_change');
    await received(3);
    print({ notifications: got });
    // Over HTTP the session ends with a DELETE; over stdio with the pipe.
    if (mode === 'http') await client.transport.terminateSession();
    await client.close();
}

main().then(
    () => process.exit(0),
    (err) => {
        console.error(err);
        process.exit(1);
    },
);
