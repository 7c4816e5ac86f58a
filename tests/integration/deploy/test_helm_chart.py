"""The Helm chart lints, renders for several value sets, and every object it renders is valid Kubernetes
(kubernetes-validate's schemas, offline). Its wiring is checked against the code: every variable it sets is
one a setting reads, each probe is on the port the service's own setting opens, and every alert rule and
autoscaler queries a metric the services export. test_chart_runs.py runs what it renders.
"""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest

from tests.helpers import exported_metric_names
from tests.integration.deploy.chart import (
    KUBE_VERSION,
    Manifest,
    component,
    helm,
    manifests_of,
    of_kind,
    pod_spec,
    render,
)

AIRFLOW = {"url": "http://airflow-api-server:8080"}
VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "everything": {
        "airflow": AIRFLOW, "bridge": {"enabled": True}, "forwarder": {"enabled": True},
        "persister": {"autoscaling": {"enabled": True}}, "scheduler": {"autoscaling": {"enabled": True}},
        "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
        "networkPolicy": {"enabled": True, "metricsFrom": [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "monitoring"}}}]},
        "tokens": {"jwksSecret": "assetbus-jwks", "signingKeySecret": "assetbus-signing-key"},
        "kafka": {"securityProtocol": "SSL", "tls": {"secretName": "kafka-client-tls", "clientCertificate": True}},
        "extraEnv": [{"name": "ASSETBUS_LOG_LEVEL", "value": "DEBUG"}],
    },
    "existing-secret": {"secret": {"existingSecret": "platform-assetbus"}, "airflow": AIRFLOW,
                        "bridge": {"enabled": True}},
    "replicas": {"persister": {"replicas": 6}, "scheduler": {"replicas": 3}, "api": {"replicas": 4}},
    "development-secret": {"secret": {"values": {"DATABASE_URL": "postgresql://a:b@postgres:5432/assetbus",
                                                 "ASSETBUS_TOKEN_SECRET": "dev-only"}}},
    "api-only": {"persister": {"enabled": False}, "scheduler": {"enabled": False}, "migrate": {"enabled": False},
                 "podDisruptionBudget": {"enabled": False}, "serviceAccount": {"create": False}},
}
CUSTOM_RESOURCES = {"ServiceMonitor": "monitoring.coreos.com/v1", "PrometheusRule": "monitoring.coreos.com/v1",
                    "ScaledObject": "keda.sh/v1alpha1"}
SERVICES = ("persister", "scheduler", "api", "bridge", "forwarder")


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Manifest]]:
    return {name: render(values) for name, values in VALUE_SETS.items()}


def _port_setting(name: str) -> str:
    """The variable that opens a service's probe port, as its settings model names it."""
    from assetbus.cli.options import env_name
    from assetbus.consumers.airflow.config import BridgeConfig, ForwarderConfig
    from assetbus.consumers.api.config import ApiConfig
    from assetbus.consumers.persister.config import PersisterConfig
    from assetbus.consumers.scheduler.config import SchedulerConfig
    from assetbus.consumers.settings import ServiceSettings

    models: dict[str, type[ServiceSettings]] = {"persister": PersisterConfig, "scheduler": SchedulerConfig,
                                                "api": ApiConfig, "bridge": BridgeConfig, "forwarder": ForwarderConfig}
    return env_name(models[name], "port" if name == "api" else "metrics_port")


def _variables_the_code_reads() -> set[str]:
    """Every environment variable a setting of the services, the CLI or the launcher reads."""
    from pydantic_settings import BaseSettings

    from assetbus.cli.options import CONNECTION, LogSettings, env_name
    from assetbus.consumers.airflow.config import BridgeConfig, ForwarderConfig
    from assetbus.consumers.api.config import ApiConfig
    from assetbus.consumers.persister.config import PersisterConfig
    from assetbus.consumers.scheduler.config import SchedulerConfig
    from assetbus.producers.kafka import ENV_PREFIX, KafkaConnection
    from assetbus.settings import AirflowSettings, ConnectionSettings, InfraSettings, SecuritySettings, TopicSettings

    names = {ENV_PREFIX + field.upper() for field in KafkaConnection.model_fields}
    for service in (PersisterConfig, SchedulerConfig, ApiConfig, BridgeConfig, ForwarderConfig):
        names |= {env_name(service, field) for field in service.model_fields if field not in CONNECTION | {"airflow"}}
    settings: tuple[type[BaseSettings], ...] = (LogSettings, AirflowSettings, SecuritySettings, InfraSettings,
                                                 TopicSettings, ConnectionSettings)
    for model in settings:
        prefix = model.model_config.get("env_prefix") or ""
        for name, info in model.model_fields.items():
            names.add(info.alias or f"{prefix}{name}".upper())
    return names


@pytest.mark.parametrize("name", VALUE_SETS)
def test_the_chart_lints(name: str, tmp_path: Any) -> None:
    import yaml

    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(VALUE_SETS[name]))
    result = helm("lint", "--strict", "--kube-version", KUBE_VERSION, "--values", str(values))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", VALUE_SETS)
def test_every_rendered_object_is_valid_kubernetes(rendered: dict[str, list[Manifest]], name: str) -> None:
    objects = rendered[name]
    assert objects
    for what, obj in manifests_of(objects):
        if obj["kind"] in CUSTOM_RESOURCES:
            assert obj["apiVersion"] == CUSTOM_RESOURCES[obj["kind"]], what
            assert obj["metadata"]["name"] and obj["spec"], what
            continue
        try:
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{name}: {what} is not valid Kubernetes {KUBE_VERSION}: {error.message} at {error.path}")


def test_each_service_is_optional_and_has_its_deployment_service_and_budget(
        rendered: dict[str, list[Manifest]]) -> None:
    everything = rendered["everything"]
    for kind in ("Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"):
        assert sorted(component(o) for o in of_kind(everything, kind)) == sorted(SERVICES), kind
    assert sorted(component(o) for o in of_kind(rendered["defaults"], "Deployment")) == ["api", "persister",
                                                                                          "scheduler"]
    api_only = rendered["api-only"]
    assert [component(o) for o in of_kind(api_only, "Deployment")] == ["api"] and not of_kind(api_only, "Job")
    assert not of_kind(api_only, "PodDisruptionBudget") and not of_kind(api_only, "ServiceAccount")
    replicas = {component(d): d["spec"]["replicas"] for d in of_kind(rendered["replicas"], "Deployment")}
    assert replicas == {"persister": 6, "scheduler": 3, "api": 4}
    scaled = {component(d): "replicas" in d["spec"] for d in of_kind(everything, "Deployment")}
    assert not scaled["persister"] and not scaled["scheduler"], "KEDA owns the replicas of a scaled Deployment"
    assert {o["spec"]["scaleTargetRef"]["name"] for o in of_kind(everything, "ScaledObject")} == {
        "ab-assetbus-persister", "ab-assetbus-scheduler"}


def test_migrations_run_first_as_a_hook(rendered: dict[str, list[Manifest]]) -> None:
    (job,) = of_kind(rendered["defaults"], "Job")
    hooks = job["metadata"]["annotations"]
    assert hooks["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert pod_spec(job)["containers"][0]["command"] == ["assetbus", "migrate"]
    assert pod_spec(job)["restartPolicy"] == "Never"
    assert pod_spec(job)["serviceAccountName"] == "default", "the chart's account does not exist before an install"
    (secret,) = of_kind(rendered["development-secret"], "Secret")
    assert int(secret["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(hooks["helm.sh/hook-weight"])
    assert secret["metadata"]["annotations"]["helm.sh/hook"] == hooks["helm.sh/hook"]


@pytest.mark.parametrize("name", VALUE_SETS)
def test_every_variable_is_one_the_code_reads_and_each_probe_is_on_the_services_own_port(
        rendered: dict[str, list[Manifest]], name: str) -> None:
    known = _variables_the_code_reads()
    for workload in [*of_kind(rendered[name], "Deployment"), *of_kind(rendered[name], "Job")]:
        (container,) = pod_spec(workload)["containers"]
        env = {var["name"]: var for var in container["env"]}
        assert set(env) - known == set(), f"{workload['metadata']['name']} sets variables nothing reads"
        assert "DATABASE_URL" in env and "KAFKA_BOOTSTRAP_SERVERS" in env
        if workload["kind"] == "Job":
            continue
        service = component(workload)
        (port,) = container["ports"]
        assert env[_port_setting(service)]["value"] == str(port["containerPort"]), service
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            probe = container[kind]["httpGet"]
            assert probe["port"] == port["name"], f"{service} {kind} is not on its own port"
            assert probe["path"] == ("/readyz" if kind == "readinessProbe" else "/healthz")
        command = container["command"]
        assert command[:2] == ["assetbus", "run"] and command[2].removeprefix("airflow-") == service


@pytest.mark.parametrize("name", VALUE_SETS)
def test_secrets_come_by_reference_and_each_service_gets_only_its_own(
        rendered: dict[str, list[Manifest]], name: str) -> None:
    objects = rendered[name]
    expected = VALUE_SETS[name].get("secret", {}).get("existingSecret") or "ab-assetbus"
    assert [s["metadata"]["name"] for s in of_kind(objects, "Secret")] == (
        ["ab-assetbus"] if "values" in VALUE_SETS[name].get("secret", {}) else [])
    for workload in [*of_kind(objects, "Deployment"), *of_kind(objects, "Job")]:
        (container,) = pod_spec(workload)["containers"]
        refs = {var["name"]: var["valueFrom"]["secretKeyRef"] for var in container["env"] if "valueFrom" in var}
        assert {ref["name"] for ref in refs.values()} == {expected}
        assert all(ref["key"] == variable for variable, ref in refs.items())
        assert not any("value" in var and re.search("PASSWORD|SECRET$", var["name"]) for var in container["env"])
        holds_token_key = "ASSETBUS_TOKEN_SECRET" in refs
        assert holds_token_key == (workload["kind"] == "Deployment" and component(workload) in ("persister", "api"))


def test_key_files_are_mounted_where_their_settings_point(rendered: dict[str, list[Manifest]]) -> None:
    for workload in of_kind(rendered["everything"], "Deployment"):
        spec = pod_spec(workload)
        (container,) = spec["containers"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        files = {var["name"]: var["value"] for var in container["env"]
                 if var["name"] in ("ASSETBUS_TOKEN_JWKS", "ASSETBUS_TOKEN_SIGNING_KEY", "KAFKA_SSL_CAFILE",
                                    "KAFKA_SSL_CERTFILE", "KAFKA_SSL_KEYFILE")}
        service = component(workload)
        assert ("ASSETBUS_TOKEN_JWKS" in files) == (service in ("persister", "api"))
        assert ("ASSETBUS_TOKEN_SIGNING_KEY" in files) == (service == "api"), "only the API mints tokens"
        assert {"KAFKA_SSL_CAFILE", "KAFKA_SSL_CERTFILE", "KAFKA_SSL_KEYFILE"} <= set(files)
        for variable, path in files.items():
            folder, key = path.rsplit("/", 1)
            secret = volumes[mounts[folder]]["secret"]
            items = {item["path"]: item["key"] for item in secret.get("items", [])}
            assert items.get(key, key) in {"jwks.json", "signing-key.pem", "ca.crt", "tls.crt", "tls.key"}, variable


@pytest.mark.parametrize("name", VALUE_SETS)
def test_pods_run_as_non_root_on_a_read_only_root_with_resources(
        rendered: dict[str, list[Manifest]], name: str) -> None:
    for workload in [*of_kind(rendered[name], "Deployment"), *of_kind(rendered[name], "Job")]:
        spec = pod_spec(workload)
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["automountServiceAccountToken"] is False
        (container,) = spec["containers"]
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        assert container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"]
        assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}, "ASSETBUS_HOME needs a writable /tmp"


def test_alerts_and_autoscalers_query_metrics_the_services_export(rendered: dict[str, list[Manifest]]) -> None:
    everything = rendered["everything"]
    exported = exported_metric_names()
    (rules,) = of_kind(everything, "PrometheusRule")
    alerts = {rule["alert"]: rule["expr"] for group in rules["spec"]["groups"] for rule in group["rules"]}
    assert {"AssetbusServiceDown", "AssetbusConsumerLag", "AssetbusDeadLetters", "AssetbusReceiptLatency",
            "AssetbusForwarderErrors", "AssetbusKafkaAccessDenied"} <= set(alerts)
    queries = [rule["expr"] for group in rules["spec"]["groups"] for rule in group["rules"]]
    queries += [o["spec"]["triggers"][0]["metadata"]["query"] for o in of_kind(everything, "ScaledObject")]
    for query in queries:
        used = set(re.findall(r"assetbus_[a-z_]+", query))
        assert used - exported == set(), f"{query} queries metrics no service exports"
        services = set(re.findall(r'service="([^"]+)"', query))
        assert services <= {s["metadata"]["name"] for s in of_kind(everything, "Service")}, query


def test_the_service_monitor_scrapes_every_services_port(rendered: dict[str, list[Manifest]]) -> None:
    everything = rendered["everything"]
    (monitor,) = of_kind(everything, "ServiceMonitor")
    scraped = {endpoint["port"] for endpoint in monitor["spec"]["endpoints"]}
    selector = monitor["spec"]["selector"]["matchLabels"]
    for service in of_kind(everything, "Service"):
        assert selector.items() <= service["metadata"]["labels"].items()
        assert {port["name"] for port in service["spec"]["ports"]} <= scraped


@pytest.mark.parametrize(("values", "refusal"), [  # in the wording of Helm 3.17's schema library and of 3.18's
    ("persister:\n  metricPort: 9464\n", r"additional propert(y|ies) '?metricPort'? (is )?not allowed"),
    ("api:\n  port: http\n", r"got string, want integer|expected: integer, given: string"),
    ("kafka:\n  securityProtocol: TLS\n", r"securityProtocol"),
])
def test_a_misspelt_or_mistyped_value_is_refused_by_the_charts_schema(values: str, refusal: str,
                                                                      tmp_path: Any) -> None:
    file = tmp_path / "values.yaml"
    file.write_text(values)
    result = helm("template", "ab", "--values", str(file))
    assert result.returncode != 0 and re.search(refusal, result.stderr, re.IGNORECASE), result.stderr


def test_the_bridge_and_forwarder_need_airflow(tmp_path: Any) -> None:
    file = tmp_path / "values.yaml"
    file.write_text("bridge:\n  enabled: true\n")
    result = helm("template", "ab", "--values", str(file))
    assert result.returncode != 0 and "bridge.enabled needs airflow.url" in result.stderr, result.stderr
