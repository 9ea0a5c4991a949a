#!/bin/sh
# Make sure redis-server (Redis >= 6.2) is on PATH for the Redis tests, which start
# their own throwaway servers on loopback ports. When it is missing, install
# Debian's redis-server with apt-get (as root, or with sudo -n), saying so first.
# NO_SYSTEM_PACKAGES=1 installs nothing: the Redis tests are then skipped, loudly.
# Under CI=true a redis-server that cannot be had is an error.
set -eu

if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi

if [ -n "${NO_SYSTEM_PACKAGES:-}" ] && [ "${NO_SYSTEM_PACKAGES}" != "0" ]; then
    echo "redis-test-server: NO_SYSTEM_PACKAGES=$NO_SYSTEM_PACKAGES: not installing redis-server;" \
        "THE REDIS TESTS WILL BE SKIPPED (drop NO_SYSTEM_PACKAGES to run them)" >&2
    exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    fi
    echo "redis-test-server: redis-server is not on PATH. About to install the Debian package" \
        "redis-server (via ${SUDO:+$SUDO }apt-get) for the Redis tests. To skip it: make test NO_SYSTEM_PACKAGES=1" >&2
    if $SUDO apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null
    then
        echo "redis-test-server: installed redis-server" >&2
    else
        echo "redis-test-server: apt-get could not install redis-server" >&2
    fi
fi

if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi
if [ "${CI:-}" = "true" ]; then
    echo "redis-test-server: error: redis-server is missing and could not be installed;" \
        "the Redis tests cannot run under CI (make test NO_SYSTEM_PACKAGES=1 skips them instead)" >&2
    exit 1
fi
echo "redis-test-server: warning: redis-server is missing; THE REDIS TESTS WILL BE SKIPPED" \
    "(install redis-server to run them)" >&2
exit 0
