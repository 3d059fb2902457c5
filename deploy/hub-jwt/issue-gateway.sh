#!/usr/bin/env bash
# deploy/hub-jwt/issue-gateway.sh: issue one gateway's credentials for the
# JWT (operator mode) hub cluster of deploy/hub-jwt, with the nats CLI's
# `nats auth` commands (v0.5.0), and write the hub's resolver.conf.
#
#   deploy/hub-jwt/issue-gateway.sh DIR SITE GATEWAY [IDENTITY]
#   deploy/hub-jwt/issue-gateway.sh ./hub-secrets site1 gateway-01
#   deploy/hub-jwt/issue-gateway.sh ./hub-secrets site1 gateway-01 NCXY...
#
# DIR is a folder you choose; it holds every key this script makes, so keep
# it private (the script creates it with mode 0700) and out of git. The
# first run in an empty DIR creates the operator "leafbox" and its system
# account SYSTEM; every run then adds the account SITE (JetStream on) with
# two users, unless they exist already:
#
#   DIR/SITE/GATEWAY.creds   the gateway's leaf user: on the hub it may publish
#                            only its uplink's subjects (site.SITE.telemetry.>),
#                            call the JetStream API its uplink and downlink
#                            need ($JS.hub.API.…), ack COMMANDS messages,
#                            receive replies on _INBOX.>, receive fleet
#                            configuration bundles ($LEAFBOX.fleet.IDENTITY.config,
#                            any gateway's key while IDENTITY is not given,
#                            and $LEAFBOX.fleet.group.*.config) and answer
#                            them (publish _INBOX.>). Copy it to the
#                            gateway (its leafnodes remote's credentials).
#   DIR/SITE/ops.creds       the site account's operations user (streams.sh,
#                            hub applications), unrestricted in its account.
#   DIR/SYSTEM/sys.creds     the system account's user (nats server ls).
#   DIR/resolver.conf        the operator, the system account and every
#                            account JWT preloaded in a memory resolver;
#                            included by hub-N.conf. Copy it next to each
#                            node's configuration and reload the nodes.
#   DIR/nsc/                 the nats CLI's store and keys (XDG_DATA_HOME):
#                            the operator's and accounts' private keys.
#
# IDENTITY is the gateway's identity public key (N..., 56 characters:
# printed at its first start, `public_key` in its /varz); given, the
# gateway may receive only the fleet bundles addressed to it. Run the
# script again with it once the gateway has started: the user's key stays,
# its permissions are set to this script's again, and the .creds file is
# rewritten with them (install it on the gateway; the link reads it on its
# next connect).
#
# Running it again for a SITE and GATEWAY that exist keeps every key; it
# sets the gateway user's permissions as above and rewrites resolver.conf
# and the .creds files. Needs the nats CLI on PATH.
set -euo pipefail

if (($# != 3 && $# != 4)); then
	echo "usage: $0 DIR SITE GATEWAY [IDENTITY]   (e.g. $0 ./hub-secrets site1 gateway-01)" >&2
	exit 2
fi
dir=$1 site=$2 gateway=$3 identity=${4:-}
if [[ -n $identity && ! $identity =~ ^N[A-Z2-7]{55}$ ]]; then
	echo "$0: $identity: not a gateway identity (a public NKey N... of 56 characters: the gateway's /varz public_key)" >&2
	exit 2
fi
for name in "$site" "$gateway"; do
	if [[ ! $name =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]]; then
		echo "$0: $name: use letters, digits, - and _ only (it becomes a subject token)" >&2
		exit 2
	fi
done
if [[ $site == SYSTEM ]]; then
	echo "$0: SYSTEM is the system account; choose another site name" >&2
	exit 2
fi

umask 077
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# The nats CLI keeps its operator store and keys under XDG_DATA_HOME; point
# it, and its contexts, into DIR so nothing lands in the user's home.
export XDG_DATA_HOME="$dir/nsc" XDG_CONFIG_HOME="$dir/nsc/config"
unset NATS_CONTEXT
operator=leafbox

nauth() { nats auth "$@" --operator "$operator" </dev/null >/dev/null; }

# jwt_subject FILE: the public key (sub claim) of the JWT in FILE.
jwt_subject() {
	local payload
	payload=$(cut -d. -f2 <"$1" | tr '_-' '/+')
	while ((${#payload} % 4)); do payload+='='; done
	base64 -d <<<"$payload" | sed -n 's/.*"sub":"\([A-Z0-9]*\)".*/\1/p'
}

store="$XDG_DATA_HOME/nats/nsc/stores/$operator"
if [[ ! -f $store/$operator.jwt ]]; then
	echo "== creating operator $operator and its system account SYSTEM in $dir"
	nats auth operator add "$operator" </dev/null >/dev/null
fi
if [[ ! -f $store/accounts/SYSTEM/users/sys.jwt ]]; then
	nauth user add sys SYSTEM --defaults
fi

if [[ ! -f $store/accounts/$site/$site.jwt ]]; then
	echo "== creating account $site (JetStream: 4GB disk, 256MB memory)"
	nauth account add "$site" --jetstream --js-disk 4GB --js-memory 256MB --defaults
fi
if [[ ! -f $store/accounts/$site/users/ops.jwt ]]; then
	nauth user add ops "$site" --defaults
fi
# The gateway's leaf user's permissions (from the gateway's side: what it
# may publish to the hub, what it may receive). Publish: the uplink's
# subjects; the JetStream API of the hub domain that the uplink (stream
# info and names for its clock and refusal checks) and the downlink (its
# durable on COMMANDS) call; the acks of COMMANDS messages; the answers to
# fleet bundles, sent to the request's reply subject (_INBOX.>: the nats
# CLI cannot issue allow_responses, which would narrow it to the replies
# of messages received). Subscribe: replies (_INBOX.>) and the fleet
# subjects cmd/internal/fleet defines, so no other hub subject reaches the
# gateway by plain interest.
fleet_self='$LEAFBOX.fleet.*.config'
if [[ -n $identity ]]; then
	fleet_self="\$LEAFBOX.fleet.$identity.config"
fi
perms=(
	--pub-allow "site.$site.telemetry.>"
	--pub-allow '$JS.hub.API.INFO'
	--pub-allow '$JS.hub.API.STREAM.NAMES'
	--pub-allow '$JS.hub.API.STREAM.INFO.*'
	--pub-allow '$JS.hub.API.CONSUMER.CREATE.COMMANDS.>'
	--pub-allow '$JS.hub.API.CONSUMER.RESET.COMMANDS.>'
	--pub-allow '$JS.hub.API.CONSUMER.INFO.COMMANDS.>'
	--pub-allow '$JS.hub.API.CONSUMER.MSG.NEXT.COMMANDS.>'
	--pub-allow '$JS.ACK.COMMANDS.>'
	--pub-allow '$JS.ACK.*.*.COMMANDS.>'
	--pub-allow '_INBOX.>'
	--sub-allow '_INBOX.>'
	--sub-allow "$fleet_self"
	--sub-allow '$LEAFBOX.fleet.group.*.config'
)
if [[ ! -f $store/accounts/$site/users/$gateway.jwt ]]; then
	echo "== creating leaf user $gateway in account $site"
	nauth user add "$gateway" "$site" --defaults "${perms[@]}"
else
	# An existing user (issued before, or before its IDENTITY was known):
	# the same key, this script's permissions.
	nauth user edit "$gateway" "$site" "${perms[@]}"
fi

mkdir -p "$dir/$site" "$dir/SYSTEM"
nauth user credential "$dir/$site/$gateway.creds" "$gateway" "$site" --force
nauth user credential "$dir/$site/ops.creds" ops "$site" --force
nauth user credential "$dir/SYSTEM/sys.creds" sys SYSTEM --force

# resolver.conf: the operator JWT, the system account, and every account's
# JWT preloaded. Written to a temporary file first so that a node reloading
# meanwhile never reads half of it.
{
	echo "# Written by deploy/hub-jwt/issue-gateway.sh; included by hub-N.conf."
	echo "# Every hub node needs the same file. Regenerate it by running the"
	echo "# script again, then reload each node."
	echo "operator: $(cat "$store/$operator.jwt")"
	echo "system_account: $(jwt_subject "$store/accounts/SYSTEM/SYSTEM.jwt")"
	echo "resolver: MEMORY"
	echo "resolver_preload: {"
	for jwt in "$store"/accounts/*/*.jwt; do
		name=$(basename "$jwt" .jwt)
		echo "  # account $name"
		echo "  $(jwt_subject "$jwt"): $(cat "$jwt")"
	done
	echo "}"
} >"$dir/resolver.conf.tmp"
mv "$dir/resolver.conf.tmp" "$dir/resolver.conf"

echo "== $dir/$site/$gateway.creds: the gateway's credentials (leafnodes remote 'credentials')"
echo "== $dir/$site/ops.creds: the account $site's operations user (streams.sh: NATS_CREDS)"
echo "== $dir/resolver.conf: copy next to every hub node's configuration, then reload the nodes"
