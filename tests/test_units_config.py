"""Sizes, capacities and DeepUMConfig: parsing, validation, JSON round trips."""
import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deepum.config import EVICTION, LEARN_FROM, DeepUMConfig, describe_knobs
from deepum.units import format_bytes, parse_capacity, parse_size

MiB = 2**20
BINARY = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "k": 2**10, "m": 2**20, "g": 2**30}
DECIMAL = {"kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


# Sizes below 2**53 bytes (8 PiB) are read exactly.
@given(st.integers(min_value=0, max_value=2**53))
def test_parse_size_plain_integers_round_trip(n):
    assert parse_size(n) == n
    assert parse_size(str(n)) == n
    assert parse_size(f" {n} B ") == n


@given(st.integers(min_value=0, max_value=2**20), st.sampled_from(sorted(BINARY | DECIMAL)))
def test_parse_size_units(n, unit):
    assert parse_size(f"{n}{unit}") == n * (BINARY | DECIMAL)[unit]
    assert parse_size(f"{n} {unit.lower()}") == n * (BINARY | DECIMAL)[unit]


def test_parse_size_fractions_and_exponents():
    assert parse_size("1.5GiB") == 3 * 2**29
    assert parse_size("1e9") == 10**9
    assert parse_size("0.5 MiB") == MiB // 2


@pytest.mark.parametrize("bad", ["", "GiB", "8 parsecs", "1..5", "8GiB!", "nan", "inf", "--1"])
def test_parse_size_rejects_garbage_naming_it(bad):
    with pytest.raises(ValueError, match="cannot read size"):
        parse_size(bad)


def test_parse_size_rejects_negative_int():
    with pytest.raises(ValueError, match="negative"):
        parse_size(-5)
    with pytest.raises(ValueError, match="negative"):
        parse_size("-1")


@pytest.mark.parametrize("big", ["1e30", "2e25", "1234567890123456789012345678", "1e400", "1e99999999", "9000000TiB",
                                 "8589934592GiB", 2**63, str(2**63)])
def test_parse_size_refuses_more_than_8_eib_in_one_message(big):
    with pytest.raises(ValueError, match="more than 8 EiB"):
        parse_size(big)


def test_parse_size_reads_the_largest_size_exactly():
    assert parse_size(str(2**63 - 1)) == 2**63 - 1
    assert parse_size("1e-400") == 0


@pytest.mark.parametrize("bad, message", [("-1", "must be positive"), ("0", "must be positive"),
                                           ("-0.5", "must be positive"), ("1.5", r"lies in \(0, 1\]"),
                                           ("2.5", "whole number of bytes")])
def test_parse_capacity_messages_say_what_a_capacity_is(bad, message):
    with pytest.raises(ValueError, match=message):
        parse_capacity(bad, 100 * MiB)


def test_counted_is_singular_for_one():
    from deepum.units import counted

    assert counted(1, "block") == "1 block"
    assert counted(2677, "kernel") == "2,677 kernels"
    assert counted(1, "block access", "block accesses") == "1 block access"
    assert counted(0, "iteration") == "0 iterations"


@given(st.integers(min_value=1, max_value=2**40), st.floats(min_value=1e-6, max_value=1.0))
def test_parse_capacity_fraction_of_footprint(footprint, fraction):
    assert parse_capacity(fraction, footprint) == max(1, int(fraction * footprint))


@given(st.integers(min_value=1, max_value=2**40))
def test_parse_capacity_fraction_strings_and_sizes(footprint):
    assert parse_capacity("1", footprint) == footprint
    assert parse_capacity("1.0", footprint) == footprint
    assert parse_capacity("0.5", footprint) == max(1, int(0.5 * footprint))
    assert parse_capacity(".25", footprint) == max(1, int(0.25 * footprint))
    assert parse_capacity("8GiB", footprint) == 8 * 2**30
    assert parse_capacity(3 * MiB, footprint) == 3 * MiB


@pytest.mark.parametrize("bad, message", [("0", "positive"), ("0.0", r"\(0, 1\]"), ("garbage", "garbage"),
                                           (1.5, r"\(0, 1\]"), (0.0, r"\(0, 1\]")])
def test_parse_capacity_rejects(bad, message):
    with pytest.raises(ValueError, match=message):
        parse_capacity(bad, 100 * MiB)


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(3 * MiB // 2) == "1.50 MiB"
    assert format_bytes(8 * 2**30) == "8.00 GiB"


def test_config_defaults_are_the_paper_setting():
    c = DeepUMConfig()
    assert (c.lookahead, c.block_rows, c.block_ways, c.block_successors) == (32, 2048, 2, 4)
    assert c.prefetch and c.pre_evict and c.invalidate


@pytest.mark.parametrize("field", ["lookahead", "exec_ids", "exec_records", "block_rows", "block_ways",
                                   "block_successors", "chain_blocks"])
@pytest.mark.parametrize("value", [0, -3, 2.0, "8", True, None, 10**9, 1e9, 2**64])
def test_config_rejects_integers_out_of_range(field, value):
    with pytest.raises(ValueError, match=rf"DeepUMConfig\.{field} must be an integer in 1\.\."):
        DeepUMConfig(**{field: value})


def test_every_knob_has_default_range_and_doc_in_one_table():
    from deepum.config import KNOBS

    fields = [f.name for f in dataclasses.fields(DeepUMConfig)]
    assert list(KNOBS) == fields
    for name, knob in KNOBS.items():
        assert getattr(DeepUMConfig(), name) == knob.default  # the default is the field's, defined once
        assert knob.doc
        if knob.choices is None:
            assert 0 <= knob.minimum <= knob.default <= knob.maximum
            DeepUMConfig(**{name: knob.maximum})
            DeepUMConfig(**{name: knob.minimum})
            with pytest.raises(ValueError, match=rf"{name} must be an integer in {knob.minimum:,}\.\.{knob.maximum:,}"):
                DeepUMConfig(**{name: knob.maximum + 1})
        else:
            assert knob.default in knob.choices and knob.minimum is None and knob.maximum is None
    text = describe_knobs()
    assert all(f"  {name} (default " in text for name in KNOBS)


@pytest.mark.parametrize("key, value", [("lookahead", 1000000000), ("block_successors", 1e9),
                                        ("exec_records", 10**9), ("block_ways", 10**9), ("chain_blocks", 10**12),
                                        ("exec_ids", 2**40), ("block_rows", 2**63)])
def test_config_file_with_an_unbounded_value_is_refused_when_read(tmp_path, key, value):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({key: value}))
    with pytest.raises(ValueError, match=rf"c\.json: DeepUMConfig\.{key} must be an integer in"):
        DeepUMConfig.load(path)


@pytest.mark.parametrize("field", ["prefetch", "pre_evict", "invalidate"])
@pytest.mark.parametrize("value", [0, 1, "yes", None])
def test_config_rejects_non_bool_switches(field, value):
    with pytest.raises(ValueError, match=rf"DeepUMConfig\.{field} must be true or false"):
        DeepUMConfig(**{field: value})


def test_config_rejects_unknown_learn_from():
    with pytest.raises(ValueError, match=r"DeepUMConfig\.learn_from must be one of"):
        DeepUMConfig(learn_from="both")


def test_config_rejects_unknown_eviction():
    with pytest.raises(ValueError, match=r'DeepUMConfig\.eviction must be one of "lru", "next_use", got \'fifo\''):
        DeepUMConfig(eviction="fifo")


def test_from_dict_unknown_keys_are_named():
    with pytest.raises(ValueError, match=r"unknown DeepUMConfig keys \['lookahaed', 'rows'\]"):
        DeepUMConfig.from_dict({"lookahaed": 16, "rows": 64})


def test_from_dict_partial_uses_defaults():
    assert DeepUMConfig.from_dict({"lookahead": 8}) == DeepUMConfig(lookahead=8)


configs = st.builds(DeepUMConfig, lookahead=st.integers(1, 512), exec_ids=st.integers(1, 1 << 16),
                    exec_records=st.integers(1, 8), block_rows=st.integers(1, 4096), block_ways=st.integers(1, 8),
                    block_successors=st.integers(1, 8), chain_blocks=st.integers(1, 8192),
                    learn_from=st.sampled_from(LEARN_FROM), eviction=st.sampled_from(EVICTION), prefetch=st.booleans(),
                    pre_evict=st.booleans(), invalidate=st.booleans())


@given(configs)
def test_config_dict_round_trip(config):
    assert DeepUMConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


def test_config_save_load_and_tune_output(tmp_path):
    config = DeepUMConfig(lookahead=64, block_rows=256, pre_evict=False)
    config.save(tmp_path / "c.json")
    assert DeepUMConfig.load(tmp_path / "c.json") == config
    (tmp_path / "best.json").write_text(json.dumps({"config": config.to_dict(), "time_s": 1.0, "candidates": []}))
    assert DeepUMConfig.load(tmp_path / "best.json") == config


@pytest.mark.parametrize("text, message", [("{not json", "cannot read"), ("[1, 2]", "JSON object"),
                                           ('{"config": {"ways": 2}}', "unknown DeepUMConfig keys")])
def test_config_load_errors(tmp_path, text, message):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        DeepUMConfig.load(path)


def test_config_load_missing_file(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        DeepUMConfig.load(tmp_path / "absent.json")


@given(configs)
def test_table_bytes_bound_grows_with_every_table_dimension(config):
    bound = config.table_bytes_bound()
    assert bound > 0
    for field in ("exec_ids", "exec_records", "block_rows", "block_ways", "block_successors"):
        bigger = DeepUMConfig.from_dict({**config.to_dict(), field: getattr(config, field) * 2})
        assert bigger.table_bytes_bound() > bound
    assert DeepUMConfig.from_dict({**config.to_dict(), "lookahead": config.lookahead + 1}).table_bytes_bound() == bound
