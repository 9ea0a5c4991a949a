#!/bin/sh
# Usage: sh scripts/system-package.sh LABEL COMMAND PACKAGES WHAT LOUD
#
# Make sure COMMAND is on PATH for part of make test (WHAT: "the Redis tests",
# "the compiled build"; LOUD: the same in capitals). When it is missing, this installs the Debian system
# PACKAGES (space-separated) with apt-get (as root, or with `sudo -n`), and says
# so before it does. NO_SYSTEM_PACKAGES=1 (`make test NO_SYSTEM_PACKAGES=1`)
# installs nothing: WHAT is then skipped, loudly, even under CI. Without the
# switch, under CI=true a COMMAND that cannot be had is an error; elsewhere WHAT
# is skipped. LABEL prefixes every line said.
set -eu
# Shell builtins only: the tests run this with a PATH that holds nothing.
LABEL=$1 COMMAND=$2 PACKAGES=$3 WHAT=$4 LOUD=$5

if command -v "$COMMAND" >/dev/null 2>&1; then
    exit 0
fi

if [ -n "${NO_SYSTEM_PACKAGES:-}" ] && [ "${NO_SYSTEM_PACKAGES}" != "0" ]; then
    echo "$LABEL: NO_SYSTEM_PACKAGES=$NO_SYSTEM_PACKAGES: not installing $PACKAGES;" \
        "$LOUD WILL BE SKIPPED (drop NO_SYSTEM_PACKAGES to run $WHAT)" >&2
    exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -n"
    fi
    echo "$LABEL: $COMMAND is not on PATH. About to install the system package(s) $PACKAGES" \
        "(Debian, via ${SUDO:+$SUDO }apt-get) for $WHAT. To skip it: make test NO_SYSTEM_PACKAGES=1" >&2
    # shellcheck disable=SC2086 # PACKAGES is a list
    if $SUDO apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null
    then
        echo "$LABEL: installed $PACKAGES" >&2
    else
        echo "$LABEL: apt-get could not install $PACKAGES" >&2
    fi
fi

if command -v "$COMMAND" >/dev/null 2>&1; then
    exit 0
fi

if [ "${CI:-}" = "true" ]; then
    echo "$LABEL: error: $COMMAND is missing and could not be installed; $WHAT" \
        "cannot run under CI (make test NO_SYSTEM_PACKAGES=1 skips $WHAT instead)" >&2
    exit 1
fi
echo "$LABEL: warning: $COMMAND is missing; $LOUD WILL BE SKIPPED" \
    "(install $PACKAGES to run $WHAT)" >&2
exit 0
