#!/bin/sh
# Emit one asset-readiness command from a shell, with no Python: Kafka's own console producer
# (org.apache.kafka.tools.ConsoleProducer, Kafka 4.x) sends the JSON that docs/schemas/EmissionCommand.json
# describes. The persister stores it once and answers on the receipts topic; this prints the command id,
# which is the receipt's correlation_id.
#
#   eval "$(assetbus token issue --dag ingest --run run-1 --task load --format env)"
#   examples/shell/emit.sh orders s3://bucket/orders/ 2026-12-01 batch-41 '{"rows": 1200}'
#
# Arguments: ASSET_NAME ASSET_URI [PARTITION_KEY] [DEDUPE_KEY] [EXTRA_JSON]
# With EMIT_PRINT_ONLY=1 the command is printed instead of sent (e.g. to fix a dead letter with
# `assetbus dlq redrive OFFSET --value-file FILE`).
# Environment: ASSETBUS_TOKEN (required: the task's signed token; the command's source is read from its
# claims), KAFKA_BOOTSTRAP_SERVERS (default 127.0.0.1:19092), ASSETBUS_TOPIC_PREFIX (default assetbus),
# KAFKA_LIBS (the Kafka jars; default ~/.cache/assetbus/kafka-4.4.0/libs, where `assetbus infra up` puts them).
# Needs: java (17+), jq.
set -eu

if [ $# -lt 2 ]; then
  echo "usage: $0 ASSET_NAME ASSET_URI [PARTITION_KEY] [DEDUPE_KEY] [EXTRA_JSON]" >&2
  exit 2
fi
: "${ASSETBUS_TOKEN:?set ASSETBUS_TOKEN (e.g. eval \"\$(assetbus token issue ... --format env)\")}"
bootstrap=${KAFKA_BOOTSTRAP_SERVERS:-127.0.0.1:19092}
prefix=${ASSETBUS_TOPIC_PREFIX:-assetbus}
libs=${KAFKA_LIBS:-$HOME/.cache/assetbus/kafka-4.4.0/libs}

# The token's claims (the JWT's middle part, base64url without padding) say who emits.
payload=$(printf '%s' "$ASSETBUS_TOKEN" | cut -d. -f2 | tr '_-' '/+')
while [ $(( ${#payload} % 4 )) -ne 0 ]; do payload="$payload="; done
claims=$(printf '%s' "$payload" | base64 -d)

extra=${5:-}
[ -n "$extra" ] || extra='{}'
command_id=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || uuidgen | tr 'A-Z' 'a-z')
command=$(jq -cn \
  --arg id "$command_id" --arg producer "shell-$(hostname)-$$" --arg reply "$prefix.receipts" \
  --arg name "$1" --arg uri "$2" --arg key "${3:-}" --arg dedupe "${4:-}" --argjson extra "$extra" \
  --arg token "$ASSETBUS_TOKEN" --argjson claims "$claims" --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  '{schema_version: 1, command_id: $id, producer_id: $producer, reply_to: $reply,
    asset: {name: $name, uri: $uri},
    source: ($claims | {kind, dag_id, run_id, task_id, map_index, try_number}),
    token: $token, extra: $extra,
    partition_key: (if $key == "" then null else $key end),
    dedupe_key: (if $dedupe == "" then null else $dedupe end),
    emitted_at: $now}')

if [ "${EMIT_PRINT_ONLY:-}" = 1 ]; then
  printf '%s\n' "$command"
  exit 0
fi

# Key = asset name, a tab, the command: one record.
printf '%s\t%s\n' "$1" "$command" | java -cp "$libs/*" org.apache.kafka.tools.ConsoleProducer \
  --bootstrap-server "$bootstrap" --topic "$prefix.emissions" --command-property acks=all \
  --reader-property parse.key=true --reader-property "key.separator=$(printf '\t')" >&2
echo "$command_id"
