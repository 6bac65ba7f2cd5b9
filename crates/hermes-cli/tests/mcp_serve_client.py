"""Drives `hermes mcp serve` with the official Python MCP client (the `mcp` package).

Usage: mcp_serve_client.py stdio HERMES_BINARY
       mcp_serve_client.py http URL [KEY]

Lists the tools, reads the stored conversations and the messages of the first one, runs one
`hermes_chat` turn, and prints everything as one JSON object on stdout.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


def text_of(result):
    return json.loads(result.content[0].text)


async def exercise(session):
    await session.initialize()
    tools = await session.list_tools()
    out = {"tools": [t.name for t in tools.tools]}
    conversations = text_of(await session.call_tool("conversations_list", {}))
    out["conversations"] = conversations
    if conversations["conversations"]:
        key = conversations["conversations"][0]["session_key"]
        out["conversation"] = text_of(await session.call_tool("conversation_get", {"session_key": key}))
        out["messages"] = text_of(await session.call_tool("messages_read", {"session_key": key}))
    chat = await session.call_tool("hermes_chat", {"message": "hi from an MCP client"})
    out["chat"] = text_of(chat)
    events = await session.call_tool("events_poll", {})
    out["events"] = {"is_error": events.isError, "body": text_of(events)}
    return out


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(
            command=sys.argv[2], args=["mcp", "serve"], env=dict(os.environ)
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await exercise(session)
    else:
        headers = {"Authorization": f"Bearer {sys.argv[3]}"} if len(sys.argv) > 3 else None
        async with streamablehttp_client(sys.argv[2], headers=headers) as (read, write, _):
            async with ClientSession(read, write) as session:
                out = await exercise(session)
    print(json.dumps(out))


asyncio.run(main())
