"""The ``probewatch runners`` commands: what hardware this host offers to test runs.

``inventory`` lists the local NVIDIA GPUs through NVML (name, memory, MIG mode
and instances) and says plainly when there are none and why; ``--json`` prints
the same for scripts. NVML is imported inside the command, so the CLI's help
stays fast.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from bot.cli.common import ProbewatchTyper, console

if TYPE_CHECKING:
    from runners.inventory import GpuInfo

runners_app = ProbewatchTyper(help="Runners: local GPU inventory.", no_args_is_help=True)
GiB = 1024**3


@runners_app.command("inventory")
def inventory(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """List this host's NVIDIA GPUs (name, memory, MIG), or say why there are none."""
    from runners.inventory import local_inventory

    found = local_inventory()
    if as_json:
        document = dataclasses.asdict(found)
        document["summary"] = found.summary()
        for gpu, row in zip(found.gpus, document["gpus"], strict=True):
            row["gpu_type"] = gpu.gpu_type
        typer.echo(json.dumps(document, indent=2))
        return
    console().print(found.summary(), highlight=False)
    if found.gpus:
        console().print(gpu_table(found.gpus))


def gpu_table(gpus: tuple[GpuInfo, ...]) -> Table:
    table = Table("#", "name", "memory", "MIG", "uuid")
    for gpu in gpus:
        table.add_row(str(gpu.index), gpu.name, _gib(gpu.memory_total_bytes), _mig(gpu), gpu.uuid)
    return table


def _mig(gpu: GpuInfo) -> str:
    if gpu.mig_enabled is None:
        return "not supported"
    if not gpu.mig_enabled:
        return "off"
    instances = gpu.mig_instances
    sizes = ", ".join(f"{m.name} ({_gib(m.memory_total_bytes)})" for m in instances)
    return f"on: {len(instances)} instance(s)" + (f": {sizes}" if sizes else "")


def _gib(size: int) -> str:
    return f"{size / GiB:.1f} GiB"
