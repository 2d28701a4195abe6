"""A client built on the official Python SDK's 1.x line (PyPI `mcp` 1.x),
which negotiates 2025-11-25: updates reach it through `resources/subscribe`
and notifications on its session. It plays one scenario against the example
server and prints, one JSON line each, what the server advertised and the
notifications it got (the same scenario as typescript_v1_client.cjs).

    python python_v1_client.py http URL
    python python_v1_client.py stdio COMMAND ARG...
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


def emit(line):
    print(json.dumps(line), flush=True)


async def scenario(read, write):
    got = []
    arrived = asyncio.Condition()

    async def on_message(message):
        if not isinstance(message, types.ServerNotification):
            return
        root = message.root
        if isinstance(root, types.ResourceUpdatedNotification):
            note = {"method": root.method, "uri": str(root.params.uri)}
        elif isinstance(root, (types.ToolListChangedNotification, types.PromptListChangedNotification)):
            note = {"method": root.method}
        else:
            return
        async with arrived:
            got.append(note)
            arrived.notify_all()

    async def received(count):
        async with arrived:
            await asyncio.wait_for(arrived.wait_for(lambda: len(got) >= count), 10)

    async with ClientSession(read, write, message_handler=on_message) as session:
        initialized = await session.initialize()
        emit({"capabilities": initialized.capabilities.model_dump(by_alias=True, exclude_none=True)})

        await session.subscribe_resource("file:///watched.txt")
        await session.call_tool("test_trigger_resource_update", {"uri": "file:///watched.txt"})
        await session.call_tool("test_trigger_resource_update", {"uri": "file:///other.txt"})
        await session.call_tool("test_trigger_tool_change", {})
        await received(2)
        await session.unsubscribe_resource("file:///watched.txt")
        await session.call_tool("test_trigger_resource_update", {"uri": "file:///watched.txt"})
        await session.call_tool("test_trigger_prompt_change", {})
        await received(3)
        emit({"notifications": got})


async def main():
    mode, *target = sys.argv[1:]
    if mode == "http" and len(target) == 1:
        # Leaving the context ends the session with a DELETE.
        async with streamablehttp_client(target[0]) as (read, write, _):
            await scenario(read, write)
    elif mode == "stdio" and target:
        server = StdioServerParameters(command=target[0], args=target[1:])
        async with stdio_client(server) as (read, write):
            await scenario(read, write)
    else:
        sys.exit("usage: python_v1_client.py http URL | stdio COMMAND ARG...")


asyncio.run(main())
