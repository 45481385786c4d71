#!/usr/bin/env bash
# README's main job: set up everything on a fresh machine, start the local
# Kafka broker, load a sample dataset (2 M records of 100 bytes, lz4,
# 8 partitions) with Kafka's own producer, and consume it with fastkc.
# Extra arguments go to `fastkc demo` (e.g. --records 500000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m fastkc.cli demo "$@"
