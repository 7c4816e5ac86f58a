"""The failover pair's URL: every node, libpq style, asking for the writable one; the engines read it as a host list."""

from __future__ import annotations

from sqlalchemy.engine import make_url

from assetbus.consumers.storage.urls import engine_url
from tests.cluster.pg_replica import multi_host_url


def test_the_pairs_url_names_both_nodes_and_asks_for_the_writable_one() -> None:
    url = multi_host_url([25432, 25433], user="assetbus", password="pw", database="ha")
    assert url == "postgresql://assetbus:pw@127.0.0.1:25432,127.0.0.1:25433/ha?target_session_attrs=read-write"
    engine = make_url(engine_url(url))
    _, kwargs = engine.get_dialect()().create_connect_args(engine)
    assert (kwargs["host"], kwargs["port"]) == (["127.0.0.1", "127.0.0.1"], [25432, 25433])
    assert kwargs["target_session_attrs"] == "read-write"
