"""DATABASE_URL in its two spellings: SQLAlchemy's (the engines) and libpq's (asyncpg's own connects).

A libpq URL may list several hosts in its authority (`db-a:5432,db-b:5432`), which SQLAlchemy's parser
cannot read; its asyncpg dialect takes repeated `host=h:p` parameters instead, of which asyncpg itself keeps
only the last. So each spelling is turned into the other before its reader sees it (docs/production.md,
"The multi-host URL"); `target_session_attrs` reaches `asyncpg.connect` either way.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["DEFAULT_PORT", "asyncpg_dsn", "engine_url", "host_list", "wants_writes"]

DEFAULT_PORT = 5432
_PLAIN_SCHEMES = ("postgresql", "postgres")
_ENGINE_SCHEME = "postgresql+asyncpg"


def _split_host(item: str) -> tuple[str, int]:
    """`host`, `host:port`, `[v6]:port` → (host, port)."""
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:] else DEFAULT_PORT
    host, _, port = item.rpartition(":") if ":" in item else (item, "", "")
    return host, int(port) if port else DEFAULT_PORT


def _join_host(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _authority_hosts(netloc: str) -> tuple[str, list[tuple[str, int]]]:
    """`user:pw@h1:p1,h2:p2` → ("user:pw@", [(h1, p1), (h2, p2)]) ("" and [] when there is no host)."""
    userinfo, at, hostlist = netloc.rpartition("@")
    hosts = [_split_host(item) for item in hostlist.split(",") if item]
    return userinfo + at, hosts


def _with_scheme(url: str, scheme: str) -> str:
    head, sep, rest = url.partition("://")
    if not sep or head.split("+")[0] not in _PLAIN_SCHEMES:
        return url
    return f"{scheme}://{rest}"


def _rebuilt(url: str, netloc: str, pairs: list[tuple[str, str]], *, rename: tuple[str, str]) -> str:
    """`url` with this authority and query, its parameter `rename[0]` named `rename[1]` (unless that is set
    already); `url` itself, as given, when nothing changed."""
    old, new = rename
    names = {name for name, _ in pairs}
    if old in names and new not in names:
        pairs = [(new if name == old else name, value) for name, value in pairs]
    parts = urlsplit(url)
    if netloc == parts.netloc and pairs == parse_qsl(parts.query, keep_blank_values=True):
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(pairs, safe="/:,[]")))


def engine_url(url: str) -> str:
    """The SQLAlchemy asyncpg URL of a DATABASE_URL in either spelling (an engine URL comes back unchanged).

    `postgresql://` and `postgres://` get the asyncpg driver; libpq's `sslmode=` becomes asyncpg's `ssl=`
    (same values); a host list in the authority becomes `host=h:p` query parameters, each with its port.
    """
    url = _with_scheme(url, _ENGINE_SCHEME)
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    userinfo, hosts = _authority_hosts(parts.netloc)
    netloc = parts.netloc
    if len(hosts) > 1:
        netloc = userinfo
        pairs = [(name, value) for name, value in pairs if name not in ("host", "port")]
        pairs = [("host", _join_host(host, port)) for host, port in hosts] + pairs
    return _rebuilt(url, netloc, pairs, rename=("sslmode", "ssl"))


def asyncpg_dsn(url: str) -> str:
    """The libpq-style DSN `asyncpg.connect` reads, of a DATABASE_URL in either spelling.

    The driver suffix goes, `ssl=` becomes `sslmode=`, and repeated `host=h:p` parameters (the engine's
    spelling, of which asyncpg would keep only the last) become the host list of the authority.
    """
    url = _with_scheme(url, "postgresql")
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query_hosts = [value for name, value in pairs if name == "host"]
    netloc = parts.netloc
    if len(query_hosts) > 1 and all(not h.startswith("/") and "," not in h for h in query_hosts):
        userinfo, _ = _authority_hosts(parts.netloc)
        netloc = userinfo + ",".join(_join_host(*_split_host(h)) for h in query_hosts)
        pairs = [(name, value) for name, value in pairs if name not in ("host", "port")]
    return _rebuilt(url, netloc, pairs, rename=("ssl", "sslmode"))


def host_list(url: str) -> list[str]:
    """The `host:port` of every host a DATABASE_URL (either spelling) names, in the order they are tried."""
    parts = urlsplit(asyncpg_dsn(url))
    _, hosts = _authority_hosts(parts.netloc)
    if not hosts:
        hosts = [_split_host(value) for name, value in parse_qsl(parts.query) if name == "host"]
    return [_join_host(host, port) for host, port in hosts]


def wants_writes(url: str) -> bool:
    """The URL asks the driver for a host that takes writes (`target_session_attrs=read-write` or `primary`)."""
    attrs = [value for name, value in parse_qsl(urlsplit(url).query) if name == "target_session_attrs"]
    return bool(attrs) and attrs[-1] in ("read-write", "primary")
