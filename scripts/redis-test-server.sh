#!/bin/sh
# Make sure `redis-server` is on PATH for the Redis tests (tests/test_redis.py),
# which start their own throwaway instance on a loopback port and stop it after:
# Debian's redis-server (Redis >= 6.2 is needed, for SET ... EXAT), installed
# as scripts/system-package.sh says, NO_SYSTEM_PACKAGES=1 included.
# The directory of this script, with shell builtins only (run as "sh name.sh" it has none).
case $0 in */*) HERE=${0%/*} ;; *) HERE=. ;; esac
exec /bin/sh "$HERE/system-package.sh" redis-test-server redis-server redis-server \
    "the Redis tests" "THE REDIS TESTS"
