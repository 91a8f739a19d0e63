"""What a test patch sets options to, and which values leave an option off."""

from __future__ import annotations

import ast
import textwrap

import pytest

from probe_builder.promises.settings import (
    is_off,
    last_key,
    settings_in_source,
    settings_in_text,
)

SOURCE = """
import pytest

CONFIG = {"actor.use_remove_padding": True, "offload": False}


@pytest.fixture
def engine(monkeypatch):
    monkeypatch.setattr(Engine, "fused_topk", True)
    return Engine(chunked_prefill=False, max_tokens=8)


def test_run(engine):
    engine.config.overlap_grad_reduce = True
    engine.config["pin_memory"] = None
    run(["--enable-fused-sampler", "--num-workers", "0", "trainer.resume_mode=disable"])
"""


def test_every_way_a_python_test_file_sets_an_option_is_read():
    tree = ast.parse(textwrap.dedent(SOURCE))
    found = {(s.key, s.value) for s in settings_in_source("tests/test_x.py", tree)}
    assert found >= {
        ("use_remove_padding", "True"),
        ("offload", "False"),
        ("fused_topk", "True"),
        ("chunked_prefill", "False"),
        ("max_tokens", "8"),
        ("overlap_grad_reduce", "True"),
        ("pin_memory", "None"),
        ("enable_fused_sampler", "True"),
        ("num_workers", "0"),
        ("resume_mode", "disable"),
    }


def test_a_script_and_a_run_configuration_set_options_on_their_lines():
    script = [(3, "python -m pkg.main actor.use_x=True \\"), (4, "  --fuse-sampling --tp 2")]
    found = {(s.key, s.value, s.line) for s in settings_in_text("tests/e2e/run.sh", script)}
    assert found == {("use_x", "True", 3), ("fuse_sampling", "True", 4), ("tp", "2", 4)}
    config = [(1, "actor:"), (2, "  use_dynamic_bsz: false  # off"), (3, "# offload: true")]
    found = {(s.key, s.value) for s in settings_in_text("tests/e2e/cfg.yaml", config)}
    assert found == {("use_dynamic_bsz", "false")}


@pytest.mark.parametrize(
    "value", ["False", "None", "0", "''", '"none"', "'disable'", "null", "[]", None]
)
def test_values_that_leave_an_option_off(value):
    assert is_off(value)


@pytest.mark.parametrize("value", ["True", "1", "'fused'", "use_x", "field(default=True)", "2"])
def test_values_that_turn_an_option_on(value):
    assert not is_off(value)


def test_an_option_is_named_as_code_reads_it():
    assert last_key("--enable-fused-sampler") == "enable_fused_sampler"
    assert last_key("actor.optim.use_x") == "use_x"
