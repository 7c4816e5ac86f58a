"""The topics and ACLs an installation needs, for platform teams that provision them (`assetbus topics plan`)."""

from assetbus.plan.formats import FORMATS, PlanFormat, as_document, render
from assetbus.plan.model import (
    PRINCIPALS,
    USER_AUTHS,
    Acl,
    Plan,
    PlannedTopic,
    UserAuth,
    build_plan,
    parse_principals,
)

__all__ = ["FORMATS", "PRINCIPALS", "USER_AUTHS", "Acl", "Plan", "PlanFormat", "PlannedTopic", "UserAuth",
           "as_document", "build_plan", "parse_principals", "render"]
