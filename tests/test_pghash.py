"""Tests for lockdocs.pghash against hash values recorded from a live PostgreSQL 15 server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockdocs.pghash import (
    bigint_to_tag,
    hash_bytes,
    hash_bytes_extended,
    hashtext,
    hashtextextended,
    int4pair_to_tag,
)

DATA = json.loads(
    (Path(__file__).parent / "data" / "postgres-hash-vectors.json").read_text(encoding="utf-8")
)
VECTORS: list[dict[str, Any]] = DATA["vectors"]
IDS = [f"{i:03d}-{v['text'][:24]!a}" for i, v in enumerate(VECTORS)]

INT32_RANGE = (-(2**31), 2**31 - 1)
INT64_RANGE = (-(2**63), 2**63 - 1)


def test_vector_file_is_complete() -> None:
    assert DATA["count"] == len(VECTORS) == 153
    assert DATA["server_encoding"] == "UTF8"
    for v in VECTORS:
        assert len(v["text"]) == v["char_length"]
        assert len(v["text"].encode("utf-8")) == v["octet_length"]
        assert {int(s) for s in v["hashtextextended_other_seeds"]} == set(DATA["extra_seeds"])


@pytest.mark.parametrize("vec", VECTORS, ids=IDS)
def test_hashtext(vec: dict[str, Any]) -> None:
    assert hashtext(vec["text"]) == vec["hashtext"]
    assert hash_bytes(vec["text"].encode("utf-8")) == vec["hashtext"] & 0xFFFFFFFF


@pytest.mark.parametrize("vec", VECTORS, ids=IDS)
def test_hashtextextended_every_seed(vec: dict[str, Any]) -> None:
    text = vec["text"]
    expected = {
        0: vec["hashtextextended_seed0"],
        1: vec["hashtextextended_seed1"],
        **{int(s): h for s, h in vec["hashtextextended_other_seeds"].items()},
    }
    assert len(expected) == 2 + len(DATA["extra_seeds"])
    actual = {seed: hashtextextended(text, seed) for seed in expected}
    assert actual == expected
    assert hashtextextended(text) == vec["hashtextextended_seed0"]
    data = text.encode("utf-8")
    for seed, value in expected.items():
        # The unsigned C function, with the seed given signed or as its uint64 bit pattern.
        assert hash_bytes_extended(data, seed) == value & 0xFFFFFFFFFFFFFFFF
        assert hash_bytes_extended(data, seed & 0xFFFFFFFFFFFFFFFF) == value & 0xFFFFFFFFFFFFFFFF


@pytest.mark.parametrize("vec", VECTORS, ids=IDS)
def test_extended_seed0_low_bits_equal_hashtext(vec: dict[str, Any]) -> None:
    text = vec["text"]
    assert hashtextextended(text, 0) & 0xFFFFFFFF == hashtext(text) & 0xFFFFFFFF
    assert vec["hashtextextended_seed0"] & 0xFFFFFFFF == vec["hashtext"] & 0xFFFFFFFF


@settings(max_examples=200)
@given(st.binary(max_size=64))
def test_extended_seed0_low_bits_equal_hash_bytes(data: bytes) -> None:
    assert hash_bytes_extended(data, 0) & 0xFFFFFFFF == hash_bytes(data)


def test_result_ranges() -> None:
    for v in VECTORS:
        assert INT32_RANGE[0] <= hashtext(v["text"]) <= INT32_RANGE[1]
        assert INT64_RANGE[0] <= hashtextextended(v["text"], -1) <= INT64_RANGE[1]
        assert 0 <= hash_bytes(v["text"].encode("utf-8")) < 2**32
        assert 0 <= hash_bytes_extended(v["text"].encode("utf-8"), -1) < 2**64


@pytest.mark.parametrize("seed", [2**63, 2**64, -(2**63) - 1, -(2**64)])
def test_hashtextextended_seed_out_of_range(seed: int) -> None:
    with pytest.raises(ValueError, match="seed"):
        hashtextextended("domains", seed)


@pytest.mark.parametrize("seed", [2**64, -(2**63) - 1])
def test_hash_bytes_extended_seed_out_of_range(seed: int) -> None:
    with pytest.raises(ValueError, match="seed"):
        hash_bytes_extended(b"domains", seed)


def test_seed_range_edges_accepted() -> None:
    assert hashtextextended("domains", 2**63 - 1) == 5428202871859174161
    assert hashtextextended("domains", -(2**63)) == 275600141922031509


def test_text_that_postgres_cannot_hold_is_rejected() -> None:
    with pytest.raises(ValueError, match="NUL"):
        hashtext("a\x00b")
    with pytest.raises(UnicodeEncodeError):
        hashtextextended("\ud800", 1)


def test_bigint_to_tag() -> None:
    assert bigint_to_tag(4294967297) == (1, 1, 1)
    assert bigint_to_tag(hashtext("domains")) == (4294967295, 2814859907, 1)
    assert bigint_to_tag(0) == (0, 0, 1)
    assert bigint_to_tag(-1) == (0xFFFFFFFF, 0xFFFFFFFF, 1)
    assert bigint_to_tag(2**63 - 1) == (0x7FFFFFFF, 0xFFFFFFFF, 1)
    assert bigint_to_tag(-(2**63)) == (0x80000000, 0, 1)


def test_int4pair_to_tag() -> None:
    assert int4pair_to_tag(0, 1) == (0, 1, 2)
    assert int4pair_to_tag(-1, -(2**31)) == (0xFFFFFFFF, 0x80000000, 2)
    assert int4pair_to_tag(2**31 - 1, hashtext("domains")) == (0x7FFFFFFF, 2814859907, 2)


def test_key_spaces_are_distinct() -> None:
    # Same field2/field3 bits, but field4 tells the bigint and int4-pair spaces apart.
    assert bigint_to_tag(1)[:2] == int4pair_to_tag(0, 1)[:2]
    assert bigint_to_tag(1) != int4pair_to_tag(0, 1)


@pytest.mark.parametrize("key", [2**63, -(2**63) - 1])
def test_bigint_to_tag_out_of_range(key: int) -> None:
    with pytest.raises(ValueError, match="bigint"):
        bigint_to_tag(key)


@pytest.mark.parametrize(("k1", "k2"), [(2**31, 0), (0, -(2**31) - 1), (2**32 - 1, 0)])
def test_int4pair_to_tag_out_of_range(k1: int, k2: int) -> None:
    with pytest.raises(ValueError, match="int4"):
        int4pair_to_tag(k1, k2)
