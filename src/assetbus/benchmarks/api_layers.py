"""Where the API's time goes: py-spy's collapsed stacks (`--format raw`) summed by layer.

`python -m assetbus.benchmarks.api_layers PROFILE.txt [REQUESTS]` prints each layer's share of the
samples and, given the number of requests the profile covers, its µs per request (py-spy samples
250 times a second by default in `assetbus bench api --profile`; pass `--rate`). A sample belongs to
the innermost frame that is not the event loop's own I/O plumbing: a socket write made by asyncpg
counts as the database round trip, one made by the HTTP server as the server.
"""

from __future__ import annotations

import argparse
import collections
import re

LAYERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("auth (token verification)", re.compile(r"\(jwt/|auth/tokens\.py|api/security\.py|cryptography/")),
    ("database (SQLAlchemy, asyncpg, TLS)", re.compile(r"\(sqlalchemy/|\(asyncpg/|storage/|greenlet|ssl\.py|sslproto")),
    ("Kafka (aiokafka)", re.compile(r"\(aiokafka/|api/gateway\.py|producers/kafka/")),
    ("validation and serialization (pydantic, JSON)", re.compile(r"\(pydantic|\(json/|\(orjson|encoders\.py|"
                                                                  r"responses\.py|serialize_response|api/models\.py")),
    ("middleware (version, body limit, metrics)", re.compile(r"api/versioning\.py|api/body_limit\.py|api/probes\.py|"
                                                             r"prometheus_client/")),
    ("framework (FastAPI routing, dependencies)", re.compile(r"\(fastapi/|\(starlette/|api/routes/|api/database\.py|"
                                                             r"api/errors\.py")),
    ("HTTP server (uvicorn, h11/httptools)", re.compile(r"\(uvicorn/|\(h11/|\(httptools|\(granian")),
)
LOOP = "event loop and sockets (asyncio/uvloop)"
PLUMBING = re.compile(r"\(asyncio/|\(selectors\.py|\(uvloop|\(socket\.py|^\s*$|\(contextlib\.py|\(<frozen")


def layer_of(stack: str) -> str:
    for frame in reversed(stack.split(";")):
        if PLUMBING.search(frame):
            continue
        for name, pattern in LAYERS:
            if pattern.search(frame):
                return name
        return "other Python"
    return LOOP


def summarize(lines: list[str]) -> tuple[int, collections.Counter[str]]:
    counts: collections.Counter[str] = collections.Counter()
    for line in lines:
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if n.isdigit():
            counts[layer_of(stack)] += int(n)
    return counts.total(), counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("profile")
    parser.add_argument("requests", type=int, nargs="?")
    parser.add_argument("--rate", type=int, default=250, help="py-spy's samples per second")
    args = parser.parse_args()
    with open(args.profile) as f:
        total, counts = summarize(f.readlines())
    print(f"{total} samples ({total / args.rate:.2f} s on CPU)")
    for name, n in counts.most_common():
        per = f"  {n / args.rate / args.requests * 1e6:7.0f} µs/request" if args.requests else ""
        print(f"{n / total * 100:5.1f} %{per}  {name}")


if __name__ == "__main__":
    main()
