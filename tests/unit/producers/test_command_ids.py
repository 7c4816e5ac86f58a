"""Command ids are random version-4 UUIDs, never repeated, not even across a fork."""

from __future__ import annotations

import os
import uuid

import pytest

from assetbus.producers.ids import new_command_id


def test_a_command_id_is_a_version_4_rfc_4122_uuid_that_reads_back_as_itself() -> None:
    for _ in range(1000):
        made = new_command_id()
        assert made.version == 4
        assert made.variant == uuid.RFC_4122
        assert uuid.UUID(str(made)) == made
        assert hash(made) == hash(uuid.UUID(str(made)))


def test_command_ids_do_not_repeat_across_many_pool_refills() -> None:
    made = {new_command_id() for _ in range(50_000)}
    assert len(made) == 50_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_hand_out_its_parents_next_ids() -> None:
    new_command_id()  # the pool holds unused random bytes now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its next ids and leave at once
        os.close(read)
        os.write(write, "".join(str(new_command_id()) for _ in range(20)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parent = "".join(str(new_command_id()) for _ in range(20))
    assert len(child) == len(parent) == 20 * 36
    assert {child[i:i + 36] for i in range(0, len(child), 36)}.isdisjoint(
        {parent[i:i + 36] for i in range(0, len(parent), 36)})
