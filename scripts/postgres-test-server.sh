#!/bin/sh
# Make sure a PostgreSQL server (postgres, initdb, pg_basebackup: Debian's postgresql package) is
# installed for the PostgreSQL tests, which start their own throwaway servers on loopback ports
# (as the postgres user when run as root: a server cannot run as root). When it is missing,
# install Debian's postgresql with apt-get (as root, or with sudo -n), saying so first.
# NO_SYSTEM_PACKAGES=1 installs nothing: the PostgreSQL tests are then skipped, loudly.
# Under CI=true a server that cannot be had is an error.
set -eu

installed() {
    ls /usr/lib/postgresql/*/bin/pg_basebackup >/dev/null 2>&1 \
        || { command -v postgres >/dev/null 2>&1 && command -v pg_basebackup >/dev/null 2>&1; }
}

if installed; then
    exit 0
fi

if [ -n "${NO_SYSTEM_PACKAGES:-}" ] && [ "${NO_SYSTEM_PACKAGES}" != "0" ]; then
    echo "postgres-test-server: NO_SYSTEM_PACKAGES=$NO_SYSTEM_PACKAGES: not installing postgresql;" \
        "THE POSTGRESQL TESTS WILL BE SKIPPED (drop NO_SYSTEM_PACKAGES to run them)" >&2
    exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    fi
    echo "postgres-test-server: no PostgreSQL server is installed. About to install the Debian package" \
        "postgresql (via ${SUDO:+$SUDO }apt-get) for the PostgreSQL tests. To skip it: make test NO_SYSTEM_PACKAGES=1" >&2
    # The package's own cluster is not wanted: the tests start theirs (create_main_cluster = false).
    if $SUDO mkdir -p /etc/postgresql-common/createcluster.d \
        && echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/requeststate.conf >/dev/null \
        && $SUDO apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    then
        echo "postgres-test-server: installed postgresql" >&2
    else
        echo "postgres-test-server: apt-get could not install postgresql" >&2
    fi
fi

if installed; then
    exit 0
fi
if [ "${CI:-}" = "true" ]; then
    echo "postgres-test-server: error: no PostgreSQL server is installed and none could be;" \
        "the PostgreSQL tests cannot run under CI (make test NO_SYSTEM_PACKAGES=1 skips them instead)" >&2
    exit 1
fi
echo "postgres-test-server: warning: no PostgreSQL server is installed; THE POSTGRESQL TESTS WILL BE SKIPPED" \
    "(install postgresql to run them)" >&2
exit 0
