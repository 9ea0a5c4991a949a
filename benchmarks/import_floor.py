"""What requeststate's imports alone cost: every module the core imports, and none of its own code.

``benchmarks.importtime`` imports this in a fresh interpreter beside ``requeststate``:
the difference is what requeststate itself adds to start-up.
"""

# ruff: noqa: F401 (imported for the time it takes)
import binascii
import collections.abc
import enum
import functools
import hashlib
import heapq
import hmac
import importlib.util
import itertools
import os
import re
import time
import typing

import cryptography.exceptions
import cryptography.hazmat.primitives.ciphers.aead
import cryptography.hazmat.primitives.hashes
import cryptography.hazmat.primitives.hmac
import cryptography.hazmat.primitives.kdf.hkdf
import msgspec.json
