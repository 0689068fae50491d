#!/usr/bin/env bash
# Runs a command against a fresh ember-server on a free loopback port: the command sees
# EMBER_TEST_DEVICE=remote:127.0.0.1:PORT and the server's token in EMBER_REMOTE_TOKEN. The
# server runs on BACKEND ($EMBER_SERVER_BACKEND, default cpu) and is stopped afterwards; the
# command's exit status is the script's (77, a skipped suite, included), and a server that
# does not stop cleanly fails it.
#
#   tests/remote/with_server.sh build/tools/ember-server/ember-server build/tests/grad_test
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: with_server.sh EMBER_SERVER COMMAND [ARGS...]" >&2
  exit 2
fi
server=$1
shift
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null; fi
  rm -rf "$dir"
}
trap cleanup EXIT
# A fresh random token per run, passed in a file (not on the command line, where ps shows it).
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$dir/token"
"$server" --backend "${EMBER_SERVER_BACKEND:-cpu}" --listen 127.0.0.1:0 \
  --port-file "$dir/port" --token-file "$dir/token" --threads 2 > "$dir/log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ -s "$dir/port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [ ! -s "$dir/port" ]; then
  echo "with_server.sh: ember-server did not start:" >&2
  cat "$dir/log" >&2
  exit 1
fi
port=$(cat "$dir/port")
EMBER_TEST_DEVICE=remote:127.0.0.1:$port EMBER_REMOTE_TOKEN=$(cat "$dir/token") "$@"
status=$?
kill -TERM "$pid"
if ! wait "$pid"; then
  echo "with_server.sh: ember-server did not stop cleanly:" >&2
  status=1
fi
pid=
cat "$dir/log"
exit $status
