"""`python -m mcp_sections.servers ...`: the `mcp-sections` command (see `servers.startup`)."""

import sys

from mcp_sections.servers.startup import main

sys.exit(main())
