"""The nemesis over real MCP flows (``python -m scripts.nemesis --mcp``): scripts/mcp_nemesis/run.py."""
