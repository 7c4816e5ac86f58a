"""The API benchmark's load generator: a separate process speaking HTTP/1.1 over keep-alive connections.

`python -m assetbus.benchmarks.http_load` reads one `LoadSpec` as JSON on stdin and prints one `LoadResult` as
JSON on stdout. The requests are built in advance and written as raw bytes, and the responses are read by their
Content-Length, so the client costs a few µs per request (its CPU is reported beside every figure).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field

from assetbus.cli.event_loop import service_loop_factory


@dataclass(frozen=True)
class LoadSpec:
    """What to send: request `i` is `requests[i % len(requests)]`, sent on connection `i % concurrency`'s turn."""

    host: str
    port: int
    concurrency: int
    count: int
    requests: list[str]
    """Raw HTTP/1.1 requests (latin-1 text), each complete with its headers and body."""
    expect: list[int] = field(default_factory=lambda: [200])


@dataclass(frozen=True)
class LoadResult:
    elapsed_s: float
    latencies_ms: list[float]
    unexpected: dict[str, int]
    """Status (or error name) → how many responses had it, for those not in `expect`."""
    client_cpu_s: float


def http_request(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> str:
    """One raw keep-alive request (latin-1 text, as `LoadSpec.requests` holds them)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: bench", *(f"{k}: {v}" for k, v in headers.items())]
    if body or method in {"POST", "PUT", "PATCH"}:
        lines.append(f"Content-Length: {len(body)}")
    return "\r\n".join(lines) + "\r\n\r\n" + body.decode("latin-1")


async def _response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        lowered = name.lower()
        if lowered == b"content-length":
            length = int(value)
        elif lowered == b"transfer-encoding":
            raise ValueError("chunked responses are not read by this client")
    if length:
        await reader.readexactly(length)
    return status


async def drive(spec: LoadSpec) -> LoadResult:
    requests = [r.encode("latin-1") for r in spec.requests]
    expected = frozenset(spec.expect)
    latencies: list[float] = []
    unexpected: dict[str, int] = {}
    turns = iter(range(spec.count))
    connections = [await asyncio.open_connection(spec.host, spec.port) for _ in range(spec.concurrency)]
    clock = time.perf_counter

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for i in turns:
            started = clock()
            writer.write(requests[i % len(requests)])
            try:
                status = await _response(reader)
            except (OSError, ValueError, asyncio.IncompleteReadError) as error:
                unexpected[type(error).__name__] = unexpected.get(type(error).__name__, 0) + 1
                return
            latencies.append((clock() - started) * 1000)
            if status not in expected:
                unexpected[str(status)] = unexpected.get(str(status), 0) + 1

    cpu, started = time.process_time(), clock()
    await asyncio.gather(*(connection(r, w) for r, w in connections))
    elapsed, cpu_s = clock() - started, time.process_time() - cpu
    for _, writer in connections:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return LoadResult(elapsed, latencies, unexpected, cpu_s)


def main() -> None:
    spec = LoadSpec(**json.load(sys.stdin))
    with asyncio.Runner(loop_factory=service_loop_factory()) as runner:  # the services' loop: uvloop
        result = runner.run(drive(spec))
    json.dump(asdict(result), sys.stdout)


if __name__ == "__main__":
    main()
