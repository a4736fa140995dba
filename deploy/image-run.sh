#!/usr/bin/env bash
# image-run.sh IMAGE — run pginbox's image as a container and use it the way
# a deployment does, against the Postgres server in PGTESTDB_HOST/PORT/USER/
# PASSWORD (image.sh runs this under tests/cmd/withpg, which starts one):
#   1. `migrate` in the container;
#   2. `serve` in the container, the public listener answering /readyz and a
#      signed Sume delivery (created, then duplicate);
#   3. the admin listener bound to 0.0.0.0 as a container needs it: refused at
#      start without PGINBOX_ADMIN_TOKEN, and with one /api/status needs the
#      token while /metrics does not.
# The container is run by buildah with the image's own user, environment and
# entrypoint, on the host's network so the loopback server is reachable.
set -euo pipefail
image=${1:?usage: image-run.sh IMAGE}
B=(buildah --storage-driver "${BUILDAH_STORAGE_DRIVER:-vfs}")
: "${PGTESTDB_HOST:?run under tests/cmd/withpg}" "${PGTESTDB_PORT:?}" "${PGTESTDB_USER:?}"
db="postgres://${PGTESTDB_USER}:${PGTESTDB_PASSWORD:-}@${PGTESTDB_HOST}:${PGTESTDB_PORT}/postgres?sslmode=disable"

fail() { echo "image-run: FAIL: $*" >&2; [ -s "${log:-/dev/null}" ] && sed 's/^/  serve: /' "$log" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

ctr=$("${B[@]}" from "$image")
log=$(mktemp)
serve_pid=""
cleanup() {
  local status=$?
  if [ -n "$serve_pid" ]; then kill -TERM -- "-$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  "${B[@]}" rm "$ctr" >/dev/null 2>&1 || true
  rm -f "$log"
  exit "$status"
}
trap cleanup EXIT
run() { "${B[@]}" run --isolation chroot --network host "$@"; }

run -e DATABASE_URL="$db" "$ctr" -- /usr/local/bin/pginbox migrate >"$log" 2>&1 || fail "pginbox migrate in the container"
echo "image-run: migrate ok" >&2

addr_port=$(free_port); admin_port=$(free_port)
secret=image-run-secret
env=(-e DATABASE_URL="$db" -e PGINBOX_ADDR="0.0.0.0:$addr_port" -e PGINBOX_PROVIDERS=sume=sume -e PGINBOX_SECRET_SUME="$secret")

# Bound to every interface without a token, the admin listener is refused at start.
if run "${env[@]}" -e PGINBOX_ADMIN_ADDR="0.0.0.0:$admin_port" "$ctr" -- /usr/local/bin/pginbox serve >"$log" 2>&1; then
  fail "serve started with the admin listener on 0.0.0.0 and no token"
fi
grep -q PGINBOX_ADMIN_TOKEN "$log" || grep -qi "AdminToken" "$log" || fail "the refusal does not name the token setting"
echo "image-run: admin listener on 0.0.0.0 without a token refused at start" >&2

token=image-run-token-$RANDOM$RANDOM
# A session of its own, so that stopping it stops buildah and the server in
# the container together (buildah does not pass the signal on).
setsid "${B[@]}" run --isolation chroot --network host "${env[@]}" -e PGINBOX_ADMIN_ADDR="0.0.0.0:$admin_port" \
  -e PGINBOX_ADMIN_TOKEN="$token" "$ctr" -- /usr/local/bin/pginbox serve >"$log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 120); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$addr_port/readyz")" = 200 ] && break
  kill -0 "$serve_pid" 2>/dev/null || fail "serve exited"
  sleep 0.5
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$addr_port/readyz")" = 200 ] || fail "/readyz is not 200 after 60 s"
echo "image-run: serve ready (/readyz 200)" >&2

deliver() {
  PGINBOX_ADDR="127.0.0.1:$addr_port" PGINBOX_SECRET_SUME="$secret" bash docs/sample-delivery.sh "$1"
}
out=$(deliver job_image_1); [[ "$out" == *'"outcome":"created"'* ]] || fail "first delivery: $out"
out=$(deliver job_image_1); [[ "$out" == *'"outcome":"duplicate"'* ]] || fail "second delivery: $out"
echo "image-run: signed delivery created, then duplicate" >&2

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "http://127.0.0.1:$admin_port/api/status")" = 401 ] || fail "/api/status without the token is not 401"
[ "$(code -H "Authorization: Bearer $token" "http://127.0.0.1:$admin_port/api/status")" = 200 ] || fail "/api/status with the token is not 200"
curl -sf "http://127.0.0.1:$admin_port/metrics" | grep -q '^pginbox_' || fail "/metrics without a token serves no pginbox_ series"
echo "image-run: admin listener on 0.0.0.0:$admin_port: /api/status needs the token, /metrics does not" >&2
echo "image-run: ok" >&2
