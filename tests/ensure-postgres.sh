#!/usr/bin/env bash
# ensure-postgres.sh makes sure the PostgreSQL server binaries (initdb, pg_ctl,
# pg_dump) are on this machine, installing Debian's postgresql package when
# they are missing. The test suite, the bench and `make run` start their own
# clusters from these binaries; this script never starts a server itself.
set -euo pipefail

have_server() {
  command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

if have_server && command -v pg_dump >/dev/null 2>&1; then
  exit 0
fi
if [ -n "${DATABASE_URL:-}${PGTESTDB_HOST:-}" ]; then
  exit 0 # an outside server is configured
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: no PostgreSQL binaries and no apt-get; install PostgreSQL 14+ or set DATABASE_URL" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "ensure-postgres: installing PostgreSQL with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
# policy-rc.d keeps the package from starting Debian's own cluster.
$SUDO apt-get install -y -qq --no-install-recommends postgresql postgresql-client >&2
