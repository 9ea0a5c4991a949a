"""Helpers the tests share: throwaway servers on loopback and the worker processes that use them."""
