#!/bin/sh
# Make sure `redis-server` is on PATH for the Redis tests (tests/test_redis.py),
# which start their own throwaway instance on a loopback port and stop it after.
# Installs Debian's redis-server (Redis >= 6.2 is needed, for SET ... EXAT) when missing.
# Under CI=true a missing redis-server is an error; elsewhere the Redis tests are skipped.
set -eu

if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    fi
    echo "redis-test-server: installing Debian's redis-server for the Redis tests" >&2
    if $SUDO apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null
    then
        :
    else
        echo "redis-test-server: apt-get could not install redis-server" >&2
    fi
fi

if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi

if [ "${CI:-}" = "true" ]; then
    echo "redis-test-server: error: redis-server is missing and could not be installed; the Redis tests cannot run under CI" >&2
    exit 1
fi
echo "redis-test-server: warning: redis-server is missing; the Redis tests will be skipped (install redis-server to run them)" >&2
exit 0
