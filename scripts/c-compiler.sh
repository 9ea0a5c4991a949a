#!/bin/sh
# Make sure a C compiler is on PATH for the compiled build (scripts/compiled.py:
# mypyc writes C): Debian's gcc and the C library's headers, installed as
# scripts/system-package.sh says, NO_SYSTEM_PACKAGES=1 included.
# The directory of this script, with shell builtins only (run as "sh name.sh" it has none).
case $0 in */*) HERE=${0%/*} ;; *) HERE=. ;; esac
exec /bin/sh "$HERE/system-package.sh" c-compiler cc "gcc libc6-dev" \
    "the compiled build" "THE COMPILED BUILD"
