"""The one in-process vector cache memory and the brain keep in sync with SQLite (`shared.embeddings.vector_cache`):
loads, updates, drops, group swaps and compaction, and searches filtered by group and kind against a brute-force
reference."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy", reason="vectors need numpy: pip install 'mcp-sections[memory]'")

from mcp_sections.shared.embeddings.vector_cache import VectorCache  # noqa: E402

DIM = 8


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def row(key: int, group: str = "g", kind: str = "k", seed: int | None = None) -> tuple[int, str, str, bytes]:
    return (key, group, kind, unit(key if seed is None else seed).astype("<f4").tobytes())


def reference(rows: dict[int, tuple[int, str, str, bytes]], query: np.ndarray, groups=None, kinds=None, k=5):  # type: ignore[no-untyped-def]
    scored = [
        (key, float(np.frombuffer(blob, dtype="<f4") @ query))
        for key, group, kind, blob in rows.values()
        if (groups is None or group in groups) and (kinds is None or kind in kinds)
    ]
    return sorted(scored, key=lambda item: -item[1])[:k]


def keys(hits: list[tuple[int, float]]) -> list[int]:
    return [key for key, _ in hits]


def test_search_matches_brute_force_through_loads_updates_and_drops() -> None:
    cache = VectorCache()
    held = {n: row(n, group=f"g{n % 3}", kind=f"k{n % 2}") for n in range(200)}
    assert cache.replace([*held.values(), (999, "g0", "k0", None)]) == [(999, "g0", "k0", None)]
    assert cache.dimension == DIM and len(cache) == 200 and cache.full_reloads == 1
    query = unit(12345)
    for groups, kinds in ((None, None), (["g1"], None), (["g0", "g2"], ["k1"]), (None, ["k0"])):
        assert keys(cache.search(query, groups=groups, kinds=kinds, limit=5)) == keys(
            reference(held, query, groups, kinds)
        )
    # updates in place (new vector, new group), additions, rows losing their vector, drops
    changed = [row(5, group="g9", seed=777), row(500, group="g9"), (7, "g1", "k1", None)]
    assert cache.put(changed) == [(7, "g1", "k1", None)]
    held.update({5: changed[0], 500: changed[1]})
    del held[7]
    cache.drop([11, 12])
    del held[11], held[12]
    assert len(cache) == len(held)
    for groups in (None, ["g9"], ["g1"]):
        assert keys(cache.search(query, groups=groups, limit=10)) == keys(reference(held, query, groups, k=10))
    assert cache.similarity(query, 5) == pytest.approx(float(unit(777) @ query), abs=1e-6)
    assert cache.similarity(query, 7) is None and cache.search(query, groups=["nobody"], limit=3) == []


def test_group_swaps_compaction_and_thresholds() -> None:
    cache = VectorCache(DIM)
    cache.replace([row(n, group="a" if n < 100 else "b") for n in range(200)])
    kept_and_new = [*range(50, 100), *range(200, 220)]
    cache.replace_group("a", [row(n, group="a", seed=n + 1000) for n in kept_and_new])
    assert cache.count("a") == 70 and cache.count("b") == 100 and len(cache) == 170
    cache.drop_group("b")
    assert len(cache) == 70 and len(cache.keys) == 70, "a quarter of the rows removed: compacted"
    query = unit(1070)
    best = cache.search(query, threshold=0.99, limit=5)
    assert keys(best) == [70] and best[0][1] == pytest.approx(1.0, abs=1e-5)
    assert all(score >= 0.2 for _, score in cache.search(query, threshold=0.2, limit=100))
    assert cache.search(np.ones(DIM + 1, dtype=np.float32), limit=3) == [], "another dimension: no hit"
    assert cache.put([(1, "a", "k", b"\x00" * 4 * (DIM + 1))]) != [], "a vector of another size is refused"
