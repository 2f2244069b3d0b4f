"""Maps the top-level `shared/` and `servers/` folders to the `mcp_sections.*` import namespace.

pyproject.toml holds all metadata; this file exists only because a prefixed package mapping
cannot be expressed statically there.
"""

from setuptools import find_packages, setup

PACKAGES = {
    f"mcp_sections.{name}": name.replace(".", "/")
    for root in ("shared", "servers")
    for name in (root, *(f"{root}.{sub}" for sub in find_packages(root)))
}
PACKAGES["mcp_sections.servers.gateway.static"] = "servers/gateway/static"  # the status page's files (no Python)

setup(
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    package_data={"mcp_sections.servers.gateway.static": ["*.css", "*.js"]},
)
