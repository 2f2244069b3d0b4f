"""The engines of a team deployment, one of each per test run (per xdist worker), in the run's temporary directory:
a PostgreSQL server (each test gets a database of its own) and a Redis server (each test a key prefix of its own)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.team.engines import Postgres, Redis, postgres_server, redis_server

_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    with postgres_server(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture
def postgres_url(postgres: Postgres) -> str:
    """A new, empty database on the run's server."""
    return postgres.create_database(f"test_{next(_numbers)}")


@pytest.fixture(scope="session")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Redis]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_prefix() -> str:
    """Keys of this test only, on the run's Redis server."""
    return f"test{next(_numbers)}"
