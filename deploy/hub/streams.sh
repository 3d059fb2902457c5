#!/usr/bin/env bash
# deploy/hub/streams.sh: create the hub streams that gateways' uplinks and
# downlinks use, in the account SITES, from the JSON files in streams/
# (the JetStream stream configuration, as `nats stream info --json` shows
# it). A stream that exists already is updated to its file instead.
#
#   deploy/hub/streams.sh
#
# NATS_URL, NATS_USER and NATS_PASSWORD choose the hub and the user; the
# defaults are the example cluster and its ops user. With NATS_CREDS (a
# .creds file, as the JWT hub of deploy/hub-jwt issues), the streams are
# made in that user's account and no user or password is sent. Needs the
# nats CLI (github.com/nats-io/natscli) on PATH.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224}
if [[ -n ${NATS_CREDS:-} ]]; then
	export NATS_CREDS
	unset NATS_USER NATS_PASSWORD
else
	export NATS_USER=${NATS_USER:-ops}
	export NATS_PASSWORD=${NATS_PASSWORD:-ops-password}
fi

for file in "$here"/streams/*.json; do
	name=$(basename "$file" .json)
	if nats stream info "$name" >/dev/null 2>&1; then
		echo "== updating stream $name from $file"
		nats stream edit "$name" --config "$file" --force
	else
		echo "== creating stream $name from $file"
		nats stream add "$name" --config "$file"
	fi
done
