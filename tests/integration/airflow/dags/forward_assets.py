"""Assets that Airflow knows through a DAG that never runs: the forwarder's tests post to them."""

from airflow.sdk import DAG, Asset, task

FEED = Asset("forward.feed", uri="s3://forward/feed")
RESTART_FEED = Asset("forward.restart_feed", uri="s3://forward/restart_feed")
INTENT_FEED = Asset("forward.intent_feed", uri="s3://forward/intent_feed")
AUTH_FEED = Asset("forward.auth_feed", uri="s3://forward/auth_feed")
CHAOS_FEED = Asset("forward.chaos_feed", uri="s3://forward/chaos_feed")

with DAG("forward_assets", schedule=None, catchup=False, tags=["assetbus-test"]):

    @task(outlets=[FEED, RESTART_FEED, INTENT_FEED, AUTH_FEED, CHAOS_FEED])
    def declare() -> None:
        """Never run: it only makes the assets known to Airflow."""

    declare()
