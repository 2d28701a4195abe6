// An application on the official TypeScript SDK's v2 client
// (@modelcontextprotocol/client) that uses every kind of request a
// gateway forwards, then listens for tool list changes. Prints one line
// per step (`tools a/search,b/fetch`, ..., `listening`, `event NAME`);
// the test changes a tool once it reads `listening`.
//
//   node typescript_gateway_client.cjs NODE_MODULES URL
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

const names = (items, key) => items.map((item) => item[key]).sort().join(',');

async function main() {
    const client = new Client(
        { name: 'through-a-gateway', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    console.log(`tools ${names((await client.listTools()).tools, 'name')}`);
    const called = await client.callTool({ name: 'a/search', arguments: {} });
    console.log(`called ${called.content[0].text}`);
    console.log(`prompts ${names((await client.listPrompts()).prompts, 'name')}`);
    const prompt = await client.getPrompt({ name: 'b/greet' });
    console.log(`prompt ${prompt.messages[0].content.text}`);
    console.log(`resources ${names((await client.listResources()).resources, 'uri')}`);
    const read = await client.readResource({ uri: 'a+file:///x' });
    console.log(`read ${read.contents[0].text}`);
    const templates = (await client.listResourceTemplates()).resourceTemplates;
    console.log(`templates ${names(templates, 'uriTemplate')}`);
    // Events on a listen stream reach the client's notification handlers.
    const event = new Promise((resolve) =>
        client.setNotificationHandler('notifications/tools/list_changed', resolve),
    );
    const subscription = await client.listen({ toolsListChanged: true });
    console.log('listening');
    console.log(`event ${(await event).method}`);
    await subscription.close();
    await client.close();
}

main().then(
    () => process.exit(0),
    (err) => {
        console.error(err);
        process.exit(1);
    },
);
