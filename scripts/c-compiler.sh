#!/bin/sh
# Make sure a C compiler is on PATH for the compiled build (scripts/compiled.py:
# mypyc writes C): Debian's gcc and the C library's headers, installed as
# scripts/system-package.sh says, NO_SYSTEM_PACKAGES=1 included.
exec /bin/sh "${0%/*}/system-package.sh" c-compiler cc "gcc libc6-dev" \
    "the compiled build" "THE COMPILED BUILD"
