"""Where the suite finds the programs it runs (git, rg, npm, and shell_ops' allow-listed programs).

A fixed search path, never the caller's `PATH`: a project cannot shadow `git` with a script of its own.
"""

DEFAULT_SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"
