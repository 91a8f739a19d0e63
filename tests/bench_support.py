"""What the benches' tests share: a bench refusing its input the way the CLI does."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def refusal(
    main: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture
) -> str:
    """The one line a bench prints when it refuses ``argv``, after checking it exits 2 and
    prints no traceback (argparse's own refusals exit through ``SystemExit``)."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code  # type: ignore[assignment]
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and not any("Traceback" in line for line in err)
    return err[-1]
