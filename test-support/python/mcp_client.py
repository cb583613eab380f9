"""Drives an MCP server with the official Python client (PyPI `mcp` 2.3), for harnessx's tests.

usage: python mcp_client.py [--answers A,B,...] (--stdio COMMAND ARG... | --http URL)

Reads a JSON list of steps on standard input and prints one JSON line per step:
  {"list": true}                          -> {"tools": [{"name", "annotations", "input_schema"}]}
  {"call": NAME, "arguments": {...}}      -> {"is_error", "text", "structured"}
  {"bench": NAME, "arguments": {...}, "n": N, "warmup": W} -> {"calls": N, "seconds": S}
      (W untimed calls, then N timed ones)
then {"elicitations": [{"message", "schema"}]}.

--answers gives the answers to the server's elicitations, in order: accept (no fields),
fill (accept with every field filled in: booleans true, choices and texts their default,
else the first choice or some text), session (accept with the decision
approve_for_session), decline, cancel. Without it the client declares no elicitation
support.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def filled(schema):
    """What a client that ticks and fills in every field of `schema` sends."""

    def fill(field):
        if field.get("type") == "boolean":
            return True
        if "default" in field:
            return field["default"]
        if "oneOf" in field:
            return field["oneOf"][0]["const"]
        if "enum" in field:
            return field["enum"][0]
        return "filled in by the client"

    return {name: fill(field) for name, field in schema["properties"].items()}


def text_of(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


async def drive(session, steps, elicitations):
    await session.initialize()
    for step in steps:
        if "list" in step:
            tools = (await session.list_tools()).tools
            out = {
                "tools": [
                    {
                        "name": t.name,
                        "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                        if t.annotations
                        else None,
                        "input_schema": t.input_schema,
                    }
                    for t in tools
                ]
            }
        elif "call" in step:
            res = await session.call_tool(step["call"], step.get("arguments", {}))
            out = {"is_error": bool(res.is_error), "text": text_of(res), "structured": res.structured_content}
        elif "bench" in step:
            n = step["n"]
            # Untimed calls first, so the figure is the steady state (connections open,
            # first-use costs paid), as criterion's warm-up gives the Rust clients.
            for _ in range(step.get("warmup", 0)):
                await session.call_tool(step["bench"], step.get("arguments", {}))
            start = time.perf_counter()
            for _ in range(n):
                res = await session.call_tool(step["bench"], step.get("arguments", {}))
                assert not res.is_error, text_of(res)
            out = {"calls": n, "seconds": time.perf_counter() - start}
        else:
            raise SystemExit(f"unknown step {step!r}")
        print(json.dumps(out), flush=True)
    print(json.dumps({"elicitations": elicitations}), flush=True)


async def main(argv):
    answers = None
    if argv[0] == "--answers":
        answers = argv[1].split(",")
        argv = argv[2:]
    steps = json.load(sys.stdin)
    elicitations = []
    callback = None
    if answers is not None:

        async def callback(context, params):
            elicitations.append({"message": params.message, "schema": params.requested_schema})
            answer = answers.pop(0) if answers else "decline"
            if answer == "accept":
                return types.ElicitResult(action="accept", content={})
            if answer == "fill":
                return types.ElicitResult(action="accept", content=filled(params.requested_schema))
            if answer == "session":
                return types.ElicitResult(action="accept", content={"decision": "approve_for_session"})
            return types.ElicitResult(action=answer)

    if argv[0] == "--stdio":
        params = StdioServerParameters(command=argv[1], args=argv[2:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=callback) as session:
                await drive(session, steps, elicitations)
    elif argv[0] == "--http":
        async with streamable_http_client(argv[1]) as (read, write):
            async with ClientSession(read, write, elicitation_callback=callback) as session:
                await drive(session, steps, elicitations)
    else:
        raise SystemExit(__doc__)


asyncio.run(main(sys.argv[1:]))
