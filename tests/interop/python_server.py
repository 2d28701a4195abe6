"""A server built on the official Python SDK (PyPI `mcp`, 2.x), serving
`subscriptions/listen` with the SDK's own handler, for tests/interop.rs.

    python python_server.py http    prints "listening on http://127.0.0.1:PORT/mcp"
    python python_server.py stdio   speaks MCP on stdin and stdout

Every 50 ms it publishes notifications/tools/list_changed and a
notifications/resources/updated for file:///a and for file:///b on the
SDK's subscription bus, so a listener sees both kinds, and only the URIs it
asked for.

Its tool list changes at runtime, as the live catalog's tests drive it:
`test_add_tool {name, description}`, `test_edit_tool {name, description}`
and `test_remove_tool {name}` add, describe anew and remove a tool that
answers with its name, each publishing the tools list change.
"""

import socket
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated, ToolsListChanged

PERIOD_S = 0.05


async def publish(bus: InMemorySubscriptionBus) -> None:
    while True:
        await anyio.sleep(PERIOD_S)
        await bus.publish(ToolsListChanged())
        await bus.publish(ResourceUpdated(uri="file:///a"))
        await bus.publish(ResourceUpdated(uri="file:///b"))


def changing_tools(server: MCPServer, bus: InMemorySubscriptionBus) -> None:
    """The tools that change the server's own tool list."""

    def answering(name: str):
        return lambda: f"{name} called"

    async def put(name: str, description: str) -> str:
        if name in added:
            server.remove_tool(name)
        server.add_tool(answering(name), name=name, description=description)
        added.add(name)
        await bus.publish(ToolsListChanged())
        return name

    added: set[str] = set()

    @server.tool(description="Add a tool (it answers with its name)")
    async def test_add_tool(name: str, description: str) -> str:
        return await put(name, description)

    @server.tool(description="Describe a tool test_add_tool added anew")
    async def test_edit_tool(name: str, description: str) -> str:
        return await put(name, description)

    @server.tool(description="Remove a tool test_add_tool added")
    async def test_remove_tool(name: str) -> str:
        if name in added:
            server.remove_tool(name)
            added.discard(name)
            await bus.publish(ToolsListChanged())
        return name


async def main(mode: str) -> None:
    bus = InMemorySubscriptionBus()
    server = MCPServer("interop-python", subscriptions=bus, log_level="WARNING")
    changing_tools(server, bus)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(publish, bus)
        if mode == "http":
            import uvicorn

            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            # Listening before saying so: a connection made before uvicorn
            # serves waits in the backlog instead of being refused.
            sock.listen(128)
            app = server.streamable_http_app(stateless_http=True)
            config = uvicorn.Config(app, log_level="warning")
            print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
            await uvicorn.Server(config).serve(sockets=[sock])
        else:
            await server.run_stdio_async()
        tasks.cancel_scope.cancel()


if __name__ == "__main__":
    if sys.argv[1:] not in (["http"], ["stdio"]):
        sys.exit("usage: python_server.py http|stdio")
    anyio.run(main, sys.argv[1])
