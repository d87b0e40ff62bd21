#!/usr/bin/env python3
"""`headroom mcp` driven by an independent client: the official Python MCP SDK (`mcp`, pinned in
.ci/run), plus raw JSON-RPC lines for what an SDK never sends.

It lists the tools, calls each with valid arguments and compares the result with `headroom
<subcommand> ... --json` run for the same inputs (the text byte for byte, the structured value as
parsed JSON; for `detect` the fields that do not change between runs), calls with invalid arguments
and checks `isError` with the one line the CLI prints to stderr, and checks that an unknown tool,
an unknown method and malformed requests get errors while the server keeps serving. It runs two
sessions: the modern protocol (server/discover, 2026-07-28, where structuredContent may be any JSON)
and the legacy handshake (initialize, where it must be an object).

Usage: python tests/mcp_client.py [path/to/headroom]   (default: target/debug/headroom)
Prints a transcript (requests and abbreviated responses) and ends with "N passed, 0 failed";
exits 1 on any failure.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "headroom"))
# A fresh config directory: no stored calibration or user catalog changes either side's figures.
CONFIG = tempfile.mkdtemp(prefix="headroom-mcp-test-")
ENV = dict(os.environ, HEADROOM_CONFIG_DIR=CONFIG, XDG_CONFIG_HOME=CONFIG, NO_COLOR="1")
ENV.pop("DISPLAY", None)
ENV.pop("WAYLAND_DISPLAY", None)

TOOLS = {
    "estimate", "fit", "recommend", "serve", "cluster", "quality", "report", "detect",
    "catalog_models", "catalog_machines",
}

PASSED = 0
FAILED = []


def check(cond, what):
    global PASSED
    if cond:
        PASSED += 1
    else:
        FAILED.append(what)
        print(f"   FAIL: {what}")


def short(text, n=150):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def cli(argv):
    """`headroom ARGV`: (exit code, stdout, the stderr line after "headroom: ")."""
    p = subprocess.run([BIN, *argv], capture_output=True, text=True, env=ENV, timeout=300)
    errs = [l for l in p.stderr.splitlines() if l.startswith("headroom: ") and not l.startswith("headroom: note: ")]
    return p.returncode, p.stdout, (errs[-1][len("headroom: "):] if errs else "")


async def call(session, name, args):
    print(f"-> tools/call {name} {json.dumps(args)}")
    r = await session.call_tool(name, args)
    text = r.content[0].text if r.content else ""
    kind = type(r.structured_content).__name__ if r.structured_content is not None else "none"
    print(f"<- isError={bool(r.is_error)} structuredContent={kind} text={short(text)}")
    return r, text


# (tool, MCP arguments, the same inputs on the command line)
VALID = [
    ("estimate", {"model": "llama-3-8b", "context": "32K", "weights": "q4_k_m", "kv": "q8_0/q4_0"},
     ["estimate", "--model", "llama-3-8b", "--context", "32K", "--weights", "q4_k_m", "--kv", "q8_0/q4_0", "--json"]),
    ("estimate", {"params": "70B", "mode": "qlora", "context": 4096, "batch": 2, "flash_attention": "off"},
     ["estimate", "--params", "70B", "--mode", "qlora", "--context", "4096", "--batch", "2", "--flash-attention", "off", "--json"]),
    ("fit", {"model": "llama-3-70b", "weights": "q4_k_m", "machine": ["desktop-rtx4090-64gb", "p5.48xlarge"]},
     ["fit", "--model", "llama-3-70b", "--weights", "q4_k_m", "--machine", "desktop-rtx4090-64gb", "--machine", "p5.48xlarge", "--json"]),
    ("fit", {"model": "qwen2.5-0.5b", "kind": "apple", "fits_only": True},
     ["fit", "--model", "qwen2.5-0.5b", "--kind", "apple", "--fits-only", "--json"]),
    ("recommend", {"model": "llama-3-8b", "no_detect": True, "budget": 3000},
     ["recommend", "--model", "llama-3-8b", "--no-detect", "--budget", "3000", "--json"]),
    ("serve", {"model": "llama-3-8b", "machine": ["p5.48xlarge"], "users": 64, "mix": "chat"},
     ["serve", "--model", "llama-3-8b", "--machine", "p5.48xlarge", "--users", "64", "--mix", "chat", "--json"]),
    ("cluster", {"model": "llama-3-70b", "mode": "full", "machine": ["p5.48xlarge"]},
     ["cluster", "--model", "llama-3-70b", "--mode", "full", "--machine", "p5.48xlarge", "--json"]),
    ("cluster", {"model": "llama-3-70b", "mode": "full", "machine": ["p5.48xlarge"], "nodes": 2},
     ["cluster", "--model", "llama-3-70b", "--mode", "full", "--machine", "p5.48xlarge", "--nodes", "2", "--json"]),
    ("report", {"model": "llama-3-8b", "machine": ["desktop-rtx4090-64gb"]},
     ["report", "--model", "llama-3-8b", "--machine", "desktop-rtx4090-64gb", "--format", "json"]),
    ("quality", {"model": "llama-3-8b", "machine": "laptop-rtx4060-16gb"},
     ["quality", "--model", "llama-3-8b", "--machine", "laptop-rtx4060-16gb", "--json"]),
    ("catalog_models", {}, ["catalog", "models", "--json"]),
    ("catalog_machines", {"kind": "cloud"}, ["catalog", "list", "--kind", "cloud", "--json"]),
]

# (tool, MCP arguments, the same inputs on the command line): refused, with the CLI's line.
INVALID = [
    ("estimate", {"model": "llama3-8b"}, ["estimate", "--model", "llama3-8b", "--json"]),
    ("estimate", {"weights": "q4km"}, ["estimate", "--weights", "q4km", "--json"]),
    ("estimate", {"context": "0"}, ["estimate", "--context", "0", "--json"]),
    ("estimate", {"model": "llama-3-8b", "params": "7B"}, ["estimate", "--model", "llama-3-8b", "--params", "7B", "--json"]),
    ("fit", {"machine": ["no-such-machine"]}, ["fit", "--machine", "no-such-machine", "--json"]),
    ("serve", {"gpus": 2}, ["serve", "--gpus", "2", "--json"]),
    ("cluster", {"pp": 3}, ["cluster", "--pp", "3", "--json"]),
    ("estimate", {"gguf": "/nonexistent/model.gguf"}, ["estimate", "--gguf", "/nonexistent/model.gguf", "--json"]),
    ("recommend", {"budget": "lots"}, ["recommend", "--budget", "lots", "--json"]),
    ("report", {"model": "llama-3-8b", "kind": "spaceship"}, ["report", "--model", "llama-3-8b", "--kind", "spaceship", "--format", "json"]),
    ("catalog_machines", {"kind": "spaceship"}, ["catalog", "list", "--kind", "spaceship", "--json"]),
    ("quality", {"model": "llama-3-8b", "max_kld": "-1"}, ["quality", "--model", "llama-3-8b", "--max-kld", "-1", "--json"]),
]

# (tool, MCP arguments, what the refusal says): arguments no command line could have.
REFUSED = [
    ("estimate", {"no_such_option": 1}, "unknown argument 'no_such_option' for tool estimate"),
    ("estimate", {"save_scenario": "/tmp/headroom-mcp-test.ron"}, "unknown argument 'save_scenario'"),
    ("catalog_models", {"json": True}, "unknown argument 'json' for tool catalog_models"),
    ("fit", {"fits_only": "yes"}, "argument 'fits_only' must be true or false"),
    ("detect", {"bench": 1}, "argument 'bench' must be true or false"),
    ("fit", {"model": ["llama-3-8b", "qwen3-8b"]}, "argument 'model' takes one value"),
    ("serve", {"users": {"n": 5}}, "argument 'users' must be a string, a number or a boolean"),
]


async def list_and_check_tools(session):
    print("-> tools/list")
    listed = await session.list_tools()
    names = [t.name for t in listed.tools]
    print(f"<- {len(names)} tools: {', '.join(names)}")
    check(set(names) == TOOLS, f"tool names {sorted(names)}")
    for t in listed.tools:
        s = t.input_schema
        ok = s.get("type") == "object" and isinstance(s.get("properties"), dict) and s.get("additionalProperties") is False
        check(ok, f"{t.name}: inputSchema is a closed object")
        check(bool(t.description), f"{t.name}: has a description")
        check("json" not in s.get("properties", {}), f"{t.name}: does not offer --json")
    by = {t.name: t for t in listed.tools}
    est = by["estimate"].input_schema["properties"]
    check("save_scenario" not in est, "estimate does not offer --save-scenario (it writes a file)")
    check(est["model"]["type"] == "string" and "catalog models" in est["model"]["description"], "estimate.model: a string with the CLI's help")
    check("q4_k_m" in est["weights"]["enum"], "estimate.weights: the precisions as an enum")
    check(est["pure_bf16"]["type"] == "boolean", "estimate.pure_bf16: a flag is a boolean")
    check("integer" in est["context"]["type"], "estimate.context: an integer (or \"32K\")")
    fit = by["fit"].input_schema["properties"]
    check(fit["machine"]["type"] == "array", "fit.machine: repeatable, an array")
    check("output" not in by["report"].input_schema["properties"], "report does not offer --output")
    check("launch" not in by["serve"].input_schema["properties"], "serve does not offer --launch")
    print(f"   estimate.inputSchema.properties.context = {json.dumps(est['context'])}")


async def valid_calls(session, any_json):
    for name, args, argv in VALID:
        r, text = await call(session, name, args)
        code, out, err = cli(argv)
        check(code == 0, f"CLI {' '.join(argv)} exits 0 ({err})")
        check(not r.is_error, f"{name} {args}: not an error ({short(text)})")
        if name == "report":
            # The report carries the generation date; the rest is the same.
            a, b = json.loads(text), json.loads(out)
            check(a == b, f"{name}: the CLI's JSON")
        else:
            check(text == out, f"{name} {args}: text is byte for byte `headroom {' '.join(argv)}`")
        value = json.loads(out)
        if isinstance(value, dict) or any_json:
            check(r.structured_content == value, f"{name}: structuredContent is the CLI's JSON")
        else:
            check(r.structured_content is None, f"{name}: no structuredContent for an array before 2026-07-28")


async def detect_call(session):
    r, text = await call(session, "detect", {})
    code, out, _ = cli(["detect", "--json"])
    check(code == 0 and not r.is_error, "detect runs")
    a, b = json.loads(text), json.loads(out)
    for k in ["ram_total", "os", "unified_memory"]:
        check(a.get(k) == b.get(k), f"detect.{k}: {a.get(k)} == {b.get(k)}")
    check(a["cpu"]["name"] == b["cpu"]["name"] and a["cpu"]["cores"] == b["cpu"]["cores"], "detect.cpu")
    check([g["name"] for g in a["gpus"]] == [g["name"] for g in b["gpus"]], "detect.gpus[].name")
    check(r.structured_content == a, "detect: structuredContent is the text's JSON")


async def invalid_calls(session):
    for name, args, argv in INVALID:
        r, text = await call(session, name, args)
        code, _, err = cli(argv)
        check(code != 0, f"CLI {' '.join(argv)} fails")
        check(bool(r.is_error), f"{name} {args}: isError")
        check(text == err, f"{name} {args}: the CLI's line ({short(err, 80)!r} vs {short(text, 80)!r})")
    for name, args, says in REFUSED:
        r, text = await call(session, name, args)
        check(bool(r.is_error) and text.startswith(says), f"{name} {args}: refused with {says!r}")
    check(not os.path.exists("/tmp/headroom-mcp-test.ron"), "no scenario file was written")


async def unknown_tool(session):
    print("-> tools/call no_such_tool {}")
    try:
        await session.call_tool("no_such_tool", {})
        check(False, "an unknown tool is a JSON-RPC error")
    except MCPError as e:
        print(f"<- error {e.code}: {short(e.message)}")
        check(e.code == -32602 and "unknown tool 'no_such_tool'" in e.message, "unknown tool: -32602 naming it")
    r, _ = await call(session, "catalog_models", {})
    check(not r.is_error, "the server keeps serving after an unknown tool")


async def modern_session():
    print("== session 1: server/discover (protocol 2026-07-28)")
    params = StdioServerParameters(command=BIN, args=["mcp"], env=ENV)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            print("-> server/discover")
            d = await session.discover()
            info = session.server_info
            print(f"<- protocol {session.protocol_version}, server {info.name if info else '?'} {info.version if info else ''}")
            check(info is not None and info.name == "headroom", "server name")
            await list_and_check_tools(session)
            await valid_calls(session, any_json=True)
            await detect_call(session)
            await invalid_calls(session)
            await unknown_tool(session)


async def legacy_session():
    print("== session 2: initialize (protocol 2025-11-25)")
    params = StdioServerParameters(command=BIN, args=["mcp"], env=ENV)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            print("-> initialize")
            init = await session.initialize()
            print(f"<- protocol {init.protocol_version}, server {init.server_info.name} {init.server_info.version}, instructions: {short(init.instructions, 80)}")
            check(init.capabilities.tools is not None, "tools capability")
            for name, args, argv in [VALID[0], VALID[2], VALID[-1]]:
                r, text = await call(session, name, args)
                code, out, _ = cli(argv)
                check(text == out, f"legacy {name}: the CLI's JSON")
                value = json.loads(out)
                want = value if isinstance(value, dict) else None
                check(r.structured_content == want, f"legacy {name}: structuredContent only for an object")
            r, text = await call(session, *INVALID[0][:2])
            check(bool(r.is_error), "legacy: an invalid argument is isError")


def raw_lines():
    """JSON-RPC lines no SDK would send: the server answers what it can and keeps serving."""
    print("== session 3: raw JSON-RPC lines on stdin")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    lines = [
        json.dumps(init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "{this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": 42}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "estimate", "arguments": "not an object"}}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "estimate", "arguments": {"model": "llama-3-8b"}}}),
    ]
    for l in lines:
        print(f"-> {short(l, 120)}")
    p = subprocess.run([BIN, "mcp"], input="\n".join(lines) + "\n", capture_output=True, text=True, env=ENV, timeout=120)
    replies = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    for r in replies:
        print(f"<- {short(json.dumps(r), 160)}")
    by_id = {r.get("id"): r for r in replies}
    check(p.returncode == 0, f"the server exits 0 at EOF (exit {p.returncode})")
    check("result" in by_id.get(1, {}), "initialize answered")
    errors = [r for r in replies if "error" in r]
    check(any(r["error"]["code"] == -32600 for r in errors), "a request that is not JSON-RPC: -32600 Invalid Request")
    check(by_id.get(3, {}).get("error", {}).get("code") == -32601, "an unknown method: -32601")
    check("error" in by_id.get(4, {}), "tools/call with non-object arguments: an error")
    check(by_id.get(5, {}).get("result") == {}, "ping answered after the bad lines")
    six = by_id.get(6, {}).get("result", {})
    _, out, _ = cli(["estimate", "--model", "llama-3-8b", "--json"])
    check(six.get("content", [{}])[0].get("text") == out, "a tool call after the bad lines is the CLI's JSON")


async def main():
    print(f"headroom: {BIN}")
    check(os.access(BIN, os.X_OK), f"{BIN} is built")
    await modern_session()
    await legacy_session()
    raw_lines()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # a crash is a failure, never a skip
        FAILED.append(f"crashed: {type(e).__name__}: {e}")
        print(f"   FAIL: crashed: {type(e).__name__}: {e}")
    for f in FAILED:
        print(f"FAILED: {f}")
    print(f"{PASSED} passed, {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)
