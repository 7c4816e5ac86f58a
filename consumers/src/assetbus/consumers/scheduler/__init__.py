"""The scheduler: partition-aware fan-out of asset events to consumer DAGs, and the declarative DAG API
(`ConsumerDag`, its conditions and partition mappings) that DAG files import from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assetbus.producers.exports import lazy_exports

if TYPE_CHECKING:
    from assetbus.consumers.scheduler.conditions import AllOf, AnyOf, AssetWait, Condition, Progress
    from assetbus.consumers.scheduler.config import SchedulerConfig
    from assetbus.consumers.scheduler.dag import ConsumerDag
    from assetbus.consumers.scheduler.mappings import (
        DailyToMonthly,
        DailyToWeekly,
        HourlyToDaily,
        Identity,
        Mapped,
        PartitionMapping,
        SkipReason,
        StaticMap,
        ToUnpartitioned,
        Unmappable,
    )
    from assetbus.consumers.scheduler.replay import ReplayRange, ReplayReport, replay
    from assetbus.consumers.scheduler.service import Scheduler
    from assetbus.consumers.scheduler.sync import LoadedDag, LoadResult, SyncReport, load_dag_files, sync_dags
    from assetbus.consumers.scheduler.topics import create_readiness_topics
else:  # the type checker sees the imports above, not a module __getattr__
    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = ["AllOf", "AnyOf", "AssetWait", "Condition", "ConsumerDag", "DailyToMonthly", "DailyToWeekly",
           "HourlyToDaily", "Identity", "LoadResult", "LoadedDag", "Mapped", "PartitionMapping", "Progress",
           "ReplayRange", "ReplayReport", "Scheduler", "SchedulerConfig", "SkipReason", "StaticMap", "SyncReport",
           "ToUnpartitioned", "Unmappable", "create_readiness_topics", "load_dag_files", "replay", "sync_dags"]
