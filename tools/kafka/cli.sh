#!/usr/bin/env bash
# Run a Kafka CLI tool from the same jars as the broker (fetching them if needed).
#   tools/kafka/cli.sh <tool|fully.qualified.MainClass> [args...]
# Tools: topics, console-producer, console-consumer, consumer-groups,
#        broker-api-versions, metadata-quorum, get-offsets, configs, cluster,
#        features, delete-records, transactions, storage
# Example:
#   tools/kafka/cli.sh topics --bootstrap-server 127.0.0.1:9092 --list
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -ge 1 ]] || { sed -n '2,8s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }
tool="$1"
shift
case "$tool" in
  topics) cls=org.apache.kafka.tools.TopicCommand ;;
  console-producer) cls=org.apache.kafka.tools.ConsoleProducer ;;
  console-consumer) cls=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
  consumer-groups) cls=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
  broker-api-versions) cls=org.apache.kafka.tools.BrokerApiVersionsCommand ;;
  metadata-quorum) cls=org.apache.kafka.tools.MetadataQuorumCommand ;;
  get-offsets) cls=org.apache.kafka.tools.GetOffsetShell ;;
  configs) cls=kafka.admin.ConfigCommand ;;
  cluster) cls=org.apache.kafka.tools.ClusterTool ;;
  features) cls=org.apache.kafka.tools.FeatureCommand ;;
  delete-records) cls=org.apache.kafka.tools.DeleteRecordsCommand ;;
  transactions) cls=org.apache.kafka.tools.TransactionsCommand ;;
  storage) cls=kafka.tools.StorageTool ;;
  *.*) cls="$tool" ;;
  *) kafka_die "unknown tool '$tool' (see the header of $0, or pass a fully qualified main class)" ;;
esac

kafka_is_fetched || "$KAFKA_SCRIPT_DIR/fetch.sh"
kafka_run_class "$cls" "$@"
