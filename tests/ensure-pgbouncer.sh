#!/usr/bin/env bash
# ensure-pgbouncer.sh makes sure Debian's pgbouncer binary is on this machine
# (the tests start their own PgBouncer processes in front of throwaway
# clusters, in transaction mode); it never starts one itself.
set -euo pipefail

if command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-pgbouncer: no pgbouncer and no apt-get; install PgBouncer 1.18+" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "ensure-pgbouncer: installing pgbouncer with apt-get" >&2
$SUDO apt-get update -qq >&2
# The package's own service is not wanted: the tests run their own.
$SUDO apt-get install -y -qq --no-install-recommends pgbouncer >&2
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now pgbouncer >/dev/null 2>&1 || true
fi
exit 0
