"""The probe kit's pytest plugin: markers, the ``ranks`` fixture, and honest skips.

Registered through the ``pytest11`` entry point (``probewatch_probes``), or
loaded with ``-p probe_builder.kit.plugin``. A probe whose markers ask for
hardware this machine lacks, or that raises ``ProbeUnsupported`` from a
fixture or its body, is skipped *with its reason*: the acceptance protocol
counts a skip as not accepted, and the reason says why. With
``--probewatch-needs=FILE`` the plugin writes every collected probe's
hardware needs as JSON, which is how runners read them without importing the
kit.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import asdict
from pathlib import Path

import pytest

from probe_builder.kit.errors import ProbeUnsupported
from probe_builder.kit.markers import MARKER_HELP, SKIP_PREFIX, needs_from_item, unsupported_reason
from probe_builder.kit.ranks import RankRunner

NEEDS_OPTION = "--probewatch-needs"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("probewatch").addoption(
        NEEDS_OPTION,
        metavar="FILE",
        default=None,
        help="write each collected probe's hardware needs (gpus, cuda_graph, cpu_ok) as JSON",
    )


def pytest_configure(config: pytest.Config) -> None:
    for help_line in MARKER_HELP.values():
        config.addinivalue_line("markers", help_line)


def pytest_collection_finish(session: pytest.Session) -> None:
    target = session.config.getoption(NEEDS_OPTION)
    if target:
        needs = {item.nodeid: asdict(needs_from_item(item)) for item in session.items}
        Path(target).write_text(json.dumps(needs, indent=2, sort_keys=True), encoding="utf-8")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    needs = needs_from_item(item)
    if needs.min_gpus > 0:  # only then is torch imported to count devices
        from probe_builder.kit.devices import cuda_device_count

        reason = unsupported_reason(needs, cuda_device_count())
        if reason is not None:
            pytest.skip(reason)
    try:
        return (yield)
    except ProbeUnsupported as exc:
        pytest.skip(f"{SKIP_PREFIX}unsupported here: {exc}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        return (yield)
    except ProbeUnsupported as exc:
        pytest.skip(f"{SKIP_PREFIX}unsupported here: {exc}")


@pytest.fixture
def ranks(tmp_path: Path) -> RankRunner:
    """``ranks(fn, world_size=2, backend="gloo", timeout_s=60)``: per-rank return values."""
    return RankRunner(store_dir=tmp_path)
