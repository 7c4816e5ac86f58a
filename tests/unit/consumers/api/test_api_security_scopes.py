"""The caller model: scopes and the task-instance check, without a server."""

from __future__ import annotations

import pytest

from assetbus.consumers.api.errors import ApiError
from assetbus.consumers.api.security import Caller
from assetbus.consumers.auth import TokenVerifier
from assetbus.producers import dag_token, issue_token, task_token
from assetbus.schemas import Provenance, SourceKind, task_instance_id

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"


def caller(token: str) -> Caller:
    claims = TokenVerifier(SECRET).verify(token)
    return Caller(claims=claims, scopes=claims.scopes, token=token)


def test_task_tokens_carry_emit_and_ti_self() -> None:
    assert TokenVerifier(SECRET).verify(task_token(SECRET, "d", "r", "t")).scopes == {"emit", "ti:self"}


def test_a_task_token_reaches_its_own_task_instance_only() -> None:
    me = caller(task_token(SECRET, "d", "r", "t", map_index=1, try_number=4))
    own = me.task_instance(task_instance_id("d", "r", "t", 1))
    assert (own.dag_id, own.run_id, own.task_id, own.map_index) == ("d", "r", "t", 1)
    for other in (task_instance_id("d", "r", "t", 0), task_instance_id("d", "r", "u", 1),
                  task_instance_id("d", "r2", "t", 1)):
        with pytest.raises(ApiError) as raised:
            me.task_instance(other)
        assert raised.value.status == 403 and raised.value.body.code == "wrong_task_instance"


def test_a_dag_run_token_is_not_a_task() -> None:
    with pytest.raises(ApiError) as raised:
        caller(dag_token(SECRET, "d", "r")).task()
    assert raised.value.body.code == "not_a_task_token"


def test_a_token_without_ti_self_cannot_touch_state() -> None:
    source = Provenance(kind=SourceKind.TASK, dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    with pytest.raises(ApiError) as raised:
        caller(issue_token(SECRET, source, scope="emit")).task()
    assert raised.value.status == 403 and raised.value.body.code == "insufficient_scope"
