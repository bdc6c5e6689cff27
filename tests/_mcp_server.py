"""A real MCP server for the tests, written with the `mcp` package: a shop's order tools.

Run over stdio (`python _mcp_server.py`), or over streamable HTTP on loopback
(`python _mcp_server.py --http PORT`). `--status TEXT` changes what every order's status
is (a server whose results went wrong); `--hang` never answers `initialize`; `--exit`
exits at once, before speaking MCP (a server that cannot start).
"""

from __future__ import annotations

import argparse
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build(status: str) -> MCPServer:
    server = MCPServer("orders")

    @server.tool()
    def lookup_order(order_id: str) -> str:
        """Look up an order's status."""
        return f"order {order_id}: {status}"

    @server.tool()
    def cancel_order(order_id: str) -> str:
        """Cancel an order that has not shipped."""
        raise ToolError(f"order {order_id} has shipped and cannot be cancelled")

    @server.tool()
    def refund_order(order_id: str, amount: float) -> str:
        """Refund part or all of an order."""
        return f"refunded {amount:.2f} on order {order_id}"

    @server.tool()
    def crash_server() -> str:
        """Ends the server process mid-call (a server that crashes)."""
        os._exit(3)

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--status", default="shipped")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--exit", action="store_true")
    args = parser.parse_args()
    if args.exit:
        raise SystemExit("orders server: cannot start (no database)")
    if args.hang:
        time.sleep(3600)
    server = build(args.status)
    if args.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
