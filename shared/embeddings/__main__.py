"""`python -m mcp_sections.shared.embeddings export MODEL_DIR TARGET [--int8] [--threads N]`: the ONNX export
child process started by `onnx.ensure_onnx_export`."""

import sys

from mcp_sections.shared.embeddings.onnx import export_child

if len(sys.argv) > 1 and sys.argv[1] == "export":
    sys.exit(export_child(sys.argv[2:]))
sys.exit("usage: python -m mcp_sections.shared.embeddings export MODEL_DIR TARGET [--int8] [--threads N]")
