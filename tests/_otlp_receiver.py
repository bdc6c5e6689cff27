"""An OTLP/HTTP trace receiver on loopback that writes what it receives as the
OpenTelemetry Collector's file exporter does, for tests of trace import without a
collector.

    with OtlpFileReceiver(tmp_path / "traces.jsonl") as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.traces_url)

Each POST to `/v1/traces` (`application/x-protobuf`, as `OTLPSpanExporter` sends it) is
decoded with opentelemetry-proto into an `ExportTraceServiceRequest` and appended to the
file as one line of OTLP JSON: protobuf's JSON mapping (lowerCamelCase keys, 64-bit
integers as strings), with trace and span ids in hex, as the OTLP JSON encoding requires
(the plain proto3 mapping would write them in base64). The server runs in a daemon thread
on 127.0.0.1 with a free port.
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def hex_ids(node: Any) -> Any:
    """The document with every trace and span id turned from base64 into hex."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hex_ids(v) for v in node]
    return node


def base64_ids(node: Any) -> Any:
    """The inverse of `hex_ids`: an OTLP JSON document as protobuf's own JSON parser reads
    it (ids in base64)."""
    if isinstance(node, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in _ID_KEYS and isinstance(v, str)
            else base64_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [base64_ids(v) for v in node]
    return node


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The exporter's pooled connection closed as its provider shuts down: not an error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class OtlpFileReceiver:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                request = ExportTraceServiceRequest.FromString(body)
                document = hex_ids(json_format.MessageToDict(request))
                with receiver._lock, receiver.path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(document, separators=(",", ":")) + "\n")
                    receiver.requests += 1
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def traces_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"

    def __enter__(self) -> OtlpFileReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
