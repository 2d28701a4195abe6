"""A PyPI `mcp` 2.x application that listens to the tools list at URL,
and listens again each time its stream is lost, as the SDK tells it to
(`SubscriptionLost`: "re-listen and refetch"). Prints one line per step:
`acknowledged N`, then `lost N CODE` when a stream ends with an error.
Stops after its second acknowledgement."""

import sys

import anyio
from mcp.client.client import Client
from mcp.client.subscriptions import SubscriptionLost


async def main(url: str) -> None:
    async with Client(url) as client:
        for attempt in (1, 2):
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    print(f"acknowledged {attempt}", flush=True)
                    if attempt == 2:
                        return
                    async for _event in subscription:
                        pass
                    print(f"complete {attempt}", flush=True)
                    return
            except SubscriptionLost as lost:
                code = getattr(lost.__cause__, "code", None)
                if code is None:
                    error = getattr(lost.__cause__, "error", None)
                    code = getattr(error, "code", None)
                print(f"lost {attempt} {code}", flush=True)


anyio.run(main, sys.argv[1])
