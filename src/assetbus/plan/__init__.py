"""The topics and ACLs an installation needs, for platform teams that provision them (`assetbus topics plan`)."""

from assetbus.plan.formats import FORMATS, PlanFormat, as_document, render
from assetbus.plan.model import PRINCIPALS, Acl, Plan, PlannedTopic, build_plan

__all__ = ["FORMATS", "PRINCIPALS", "Acl", "Plan", "PlanFormat", "PlannedTopic", "as_document", "build_plan", "render"]
