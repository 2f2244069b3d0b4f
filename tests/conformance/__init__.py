"""The official MCP conformance suite against the HTTP gateway and a section (`test_conformance.py`)."""
