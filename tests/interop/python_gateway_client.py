"""A PyPI `mcp` 2.x application that uses every kind of request a gateway
forwards at URL, then listens for tool list changes. Prints one line per
step (`tools a/search,b/fetch`, ..., `listening`, `event TYPE`); the test
changes a tool once it reads `listening`."""

import sys

import anyio
from mcp.client.client import Client


def names(items, key: str) -> str:
    return ",".join(sorted(str(getattr(item, key)) for item in items))


async def main(url: str) -> None:
    async with Client(url) as client:
        print(f"tools {names((await client.list_tools()).tools, 'name')}", flush=True)
        called = await client.call_tool("a/search", {})
        print(f"called {called.content[0].text}", flush=True)
        print(f"prompts {names((await client.list_prompts()).prompts, 'name')}", flush=True)
        prompt = await client.get_prompt("b/greet")
        print(f"prompt {prompt.messages[0].content.text}", flush=True)
        print(f"resources {names((await client.list_resources()).resources, 'uri')}", flush=True)
        read = await client.read_resource("a+file:///x")
        print(f"read {read.contents[0].text}", flush=True)
        templates = (await client.list_resource_templates()).resource_templates
        print(f"templates {names(templates, 'uri_template')}", flush=True)
        async with client.listen(tools_list_changed=True) as subscription:
            print("listening", flush=True)
            async for event in subscription:
                print(f"event {type(event).__name__}", flush=True)
                return


anyio.run(main, sys.argv[1])
