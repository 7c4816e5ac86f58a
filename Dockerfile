# The assetbus services' image, used by docker-compose.yml.
FROM python:3.11-slim
WORKDIR /app
# Dependency layer first: it is rebuilt only when a pyproject changes, not on every source edit.
COPY schemas/pyproject.toml schemas/README.md schemas/LICENSE schemas/
COPY producers/pyproject.toml producers/README.md producers/LICENSE producers/
COPY pyproject.toml README.md LICENSE ./
RUN python - <<'PY' > /tmp/requirements.txt && pip install --no-cache-dir -r /tmp/requirements.txt
import tomllib
names = {"assetbus", "assetbus-sdk", "assetbus-schemas"}
for path in ("pyproject.toml", "producers/pyproject.toml", "schemas/pyproject.toml"):
    for dep in tomllib.load(open(path, "rb"))["project"]["dependencies"]:
        if dep.split("=")[0].strip() not in names:
            print(dep)
PY
COPY schemas schemas
COPY producers producers
COPY consumers consumers
COPY migrations migrations
COPY src src
RUN pip install --no-cache-dir --no-deps ./schemas ./producers . && assetbus --help >/dev/null \
 && python -c "from assetbus.demo.story import DAGS_FILE; assert DAGS_FILE.is_file(), DAGS_FILE"
# The unprivileged user has no home: the launcher's folder (the generated token key when
# ASSETBUS_TOKEN_SECRET is unset, e.g. for `docker run ... assetbus demo`) goes to /tmp.
ENV ASSETBUS_HOME=/tmp/assetbus
USER nobody
EXPOSE 8321
# One health check for every role: it reads the container's command and asks that role's /readyz on its own
# port (the API's HTTP port; the persister's, scheduler's, bridge's or forwarder's --metrics-port or
# ASSETBUS_<SERVICE>_METRICS_PORT). A one-shot command (migrate) or a service without a probe port counts as healthy.
HEALTHCHECK --interval=10s --timeout=5s --retries=5 CMD ["python", "-m", "assetbus.healthcheck"]
# /ui and /ui/api/* need an operator token (sign-in is always on): mint one where the signing key or
# the local secret is, e.g. `docker compose exec api assetbus token operator` (docs/ui.md).
CMD ["assetbus", "run", "api", "--host", "0.0.0.0", "--port", "8321"]
