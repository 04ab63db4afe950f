#!/bin/sh
# Start PostgreSQL, Redis and the Docker engine on loopback for the real-component
# tests (Debian packages; needs root). Safe to re-run: running services are kept.
# Prints the environment the test suite reads, and nothing else, on stdout: the
# caller evals it. Whatever the services say (pg_ctlcluster reports a stale pid
# file it removed, for one) goes to stderr. A block redirection rather than a
# duplicated descriptor, so the daemons started here do not inherit the caller's
# pipe and keep its $(...) waiting forever.
set -eu
{

PG_USER=faultline PG_PASSWORD=faultline PG_DB=faultline

# PostgreSQL: Debian's package creates a cluster; start it and make our role.
PG_VERSION=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | grep -q online; then
  pg_ctlcluster "$PG_VERSION" main start
fi
for i in $(seq 1 30); do pg_isready -q -h 127.0.0.1 && break; sleep 1; done
pg_isready -h 127.0.0.1 >/dev/null || { echo "PostgreSQL did not start" >&2; exit 1; }
su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='$PG_USER'\"" | grep -q 1 ||
  su postgres -c "psql -qc \"CREATE ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PG_PASSWORD'\""
su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname='$PG_DB'\"" | grep -q 1 ||
  su postgres -c "createdb -O $PG_USER $PG_DB"

# Redis on loopback only, no persistence: it is a broker for tests.
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no \
    --logfile /tmp/faultline-redis.log
fi
for i in $(seq 1 30); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.5; done
redis-cli -h 127.0.0.1 ping >/dev/null || { echo "Redis did not start" >&2; exit 1; }

# Docker engine without a bridge: sandbox containers never get a network anyway.
if ! docker info >/dev/null 2>&1; then
  nohup dockerd --bridge=none --iptables=false </dev/null >/tmp/faultline-dockerd.log 2>&1 &
  for i in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
docker info >/dev/null 2>&1 || { echo "Docker engine did not start; see /tmp/faultline-dockerd.log" >&2; exit 1; }
} >&2

echo "export FAULTLINE_TEST_DATABASE_URL=postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:5432/$PG_DB"
echo "export FAULTLINE_TEST_REDIS_URL=redis://127.0.0.1:6379/0"
