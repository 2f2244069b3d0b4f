"""What a project's manifests declare (`shared.text.manifests`): the name the brain gives a project, and the version
get_project_info reports — read statically, a dynamic one from the file its build backend names."""

from __future__ import annotations

from pathlib import Path

from mcp_sections.shared.text.manifests import declared
from tests.rag_ops.trees import sqlparse_tree


def test_a_dynamic_version_is_read_from_the_file_its_backend_names(tmp_path: Path) -> None:
    """get_project_info said version null for sqlparse's `[tool.hatch.version] path = "sqlparse/__init__.py"`."""
    found = declared(sqlparse_tree(tmp_path))
    assert (found.name, found.version, found.version_source) == ("sqlparse", "0.6.1", "sqlparse/__init__.py")
    assert found.description == "A non-validating SQL parser." and found.manifests == ("pyproject.toml",)

    def project(name: str, pyproject: str, files: dict[str, str] | None = None) -> Path:
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        for relative, text in (files or {}).items():
            (tmp_path / name / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / relative).write_text(text, encoding="utf-8")
        return tmp_path / name

    scm = project(
        "scm",
        '[build-system]\nrequires = ["setuptools>=64", "setuptools_scm>=8"]\n[project]\nname = "a"\n'
        'dynamic = ["version"]\n[tool.setuptools_scm]\n',
    )
    assert declared(scm).version is None
    assert declared(scm).version_source == "dynamic (setuptools_scm: from the git tags at build time)"
    vcs = project("vcs", '[project]\nname = "b"\ndynamic = ["version"]\n[tool.hatch.version]\nsource = "vcs"\n')
    assert (declared(vcs).version, declared(vcs).version_source) == (None, "dynamic (vcs: computed at build time)")
    attr = project(
        "attr",
        '[project]\nname = "c"\ndynamic = ["version"]\n[tool.setuptools.dynamic]\nversion = {attr = "c.__version__"}\n',
        {"src/c/__init__.py": '__version__: str = "2.0.1"\n'},
    )
    assert (declared(attr).version, declared(attr).version_source) == ("2.0.1", "src/c/__init__.py")
    flit = project(
        "flit",
        '[build-system]\nbuild-backend = "flit_core.buildapi"\n[project]\nname = "d-e"\ndynamic = ["version"]\n',
        {"d_e.py": '"""D."""\n__version__ = "3.1"\n'},
    )
    assert (declared(flit).version, declared(flit).version_source) == ("3.1", "d_e.py")
    static = project("static", '[project]\nname = "f"\nversion = "1.0"\n')
    assert (declared(static).version, declared(static).version_source) == ("1.0", "pyproject.toml")
    outside = project(  # a path out of the project is not read
        "outside", '[project]\nname = "g"\ndynamic = ["version"]\n[tool.hatch.version]\npath = "../static/x.py"\n'
    )
    (tmp_path / "static" / "x.py").write_text('__version__ = "9"\n', encoding="utf-8")
    assert declared(outside).version is None and "not readable" in str(declared(outside).version_source)
