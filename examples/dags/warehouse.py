"""Example consumer DAGs for the README: all-of / any-of, roll-ups in a time zone, a static key map.

Register the assets first:
    for asset in clicks fx_rates fx_rates_backup sales daily_sales; do
      assetbus assets register warehouse.$asset s3://example/$asset/
    done
"""

from assetbus.consumers.scheduler import (
    AllOf,
    AnyOf,
    AssetWait,
    ConsumerDag,
    DailyToMonthly,
    DailyToWeekly,
    HourlyToDaily,
    Identity,
    StaticMap,
)

# a local day of clicks (all its hours, DST days included) plus that day's FX rates (key "2026-10-01")
# from either provider
daily_revenue = ConsumerDag(
    dag_id="warehouse.daily_revenue",
    schedule=AllOf(
        AssetWait("warehouse.clicks", mapping=HourlyToDaily("Europe/Amsterdam")),
        AnyOf(AssetWait("warehouse.fx_rates", mapping=Identity()),
              AssetWait("warehouse.fx_rates_backup", mapping=Identity())),
    ),
)

# daily partitions (key "2026-10-01") roll up into ISO weeks ("2026-W40") and months ("2026-10")
weekly_sales = ConsumerDag(
    dag_id="warehouse.weekly_sales",
    schedule=AssetWait("warehouse.daily_sales", mapping=DailyToWeekly("Europe/Amsterdam")),
)
monthly_sales = ConsumerDag(
    dag_id="warehouse.monthly_sales",
    schedule=AssetWait("warehouse.daily_sales", mapping=DailyToMonthly("Europe/Amsterdam")),
)

# regional sales partitions map to continents; a continent is ready once all its regions arrived
regional_sales = ConsumerDag(
    dag_id="warehouse.regional_sales",
    schedule=AssetWait("warehouse.sales", mapping=StaticMap({"eu-west": "europe", "eu-central": "europe",
                                                             "us-east": "americas", "us-west": "americas"},
                                                            require_all=True)),
)
