# The assetbus services' image, used by docker-compose.yml.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY schemas schemas
COPY producers producers
COPY consumers consumers
COPY migrations migrations
COPY assetbus assetbus
RUN pip install --no-cache-dir .
USER nobody
CMD ["assetbus", "--help"]
