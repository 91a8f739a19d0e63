"""A ledger of communication: every collective and point-to-point call, with bytes in and out.

``comm_ledger()`` is a dispatch mode: ``torch.distributed`` calls (``c10d.*``)
and functional collectives (``_c10d_functional.*``) both reach the dispatcher
as operators, so one mode sees ``dist.all_reduce``, ``dist.send``/``recv``,
``funcol.all_reduce`` and the rest without patching torch. What "bytes in" and
"bytes out" mean is fixed per operator in ``OP_TABLE`` (in: the payload this
rank hands to the operation; out: what it receives). ``comm_seam`` adds calls
of a repository's own transport (a weight-sync generator, a ctypes NCCL
wrapper) that the dispatcher never sees, into the same ledgers.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from probe_builder.kit.errors import KitUsageError

COMM_NAMESPACES = ("c10d", "_c10d_functional")
RETURN = "<return>"  # bytes out are the operator's return value
SOURCE_DISPATCH = "dispatch"
SOURCE_SEAM = "seam"
Direction = Literal["in", "out", "both"]


@dataclass(frozen=True)
class OpSpec:
    kind: str  # family name shared by the classic and the functional form
    bytes_in: tuple[str, ...]  # schema arguments whose tensors are this rank's payload
    bytes_out: tuple[str, ...]  # schema arguments (or RETURN) whose tensors this rank receives


def _spec(kind: str, bytes_in: str = "", bytes_out: str = "") -> OpSpec:
    return OpSpec(kind, tuple(filter(None, [bytes_in])), tuple(filter(None, [bytes_out])))


# Operator (namespace.name, without overload) -> what it moves. Synchronisation-only
# operators (wait_tensor) and helpers move nothing and are in IGNORED_OPS instead.
OP_TABLE: dict[str, OpSpec] = {
    "c10d.allreduce_": _spec("all_reduce", "tensors", "tensors"),
    "c10d.allreduce_coalesced_": _spec("all_reduce", "tensors", "tensors"),
    "c10d.broadcast_": _spec("broadcast", "tensors", "tensors"),
    "c10d.reduce_": _spec("reduce", "tensors", "tensors"),
    "c10d.allgather_": _spec("all_gather", "input_tensors", "output_tensors"),
    "c10d._allgather_base_": _spec("all_gather", "input_tensor", "output_tensor"),
    "c10d.allgather_coalesced_": _spec("all_gather", "input_list", "output_lists"),
    "c10d.allgather_into_tensor_coalesced_": _spec("all_gather", "inputs", "outputs"),
    "c10d.reduce_scatter_": _spec("reduce_scatter", "input_tensors", "output_tensors"),
    "c10d._reduce_scatter_base_": _spec("reduce_scatter", "input_tensor", "output_tensor"),
    "c10d.reduce_scatter_tensor_coalesced_": _spec("reduce_scatter", "inputs", "outputs"),
    "c10d.alltoall_": _spec("all_to_all", "input_tensors", "output_tensors"),
    "c10d.alltoall_base_": _spec("all_to_all", "input", "output"),
    "c10d.gather_": _spec("gather", "input_tensors", "output_tensors"),
    "c10d.scatter_": _spec("scatter", "input_tensors", "output_tensors"),
    "c10d.send": _spec("send", "tensors"),
    "c10d.recv_": _spec("recv", "", "tensors"),
    "c10d.recv_any_source_": _spec("recv", "", "tensors"),
    "c10d.barrier": _spec("barrier"),
    "c10d.monitored_barrier_": _spec("barrier"),
    "_c10d_functional.all_reduce": _spec("all_reduce", "input", RETURN),
    "_c10d_functional.all_reduce_": _spec("all_reduce", "input", RETURN),
    "_c10d_functional.all_reduce_coalesced": _spec("all_reduce", "inputs", RETURN),
    "_c10d_functional.all_reduce_coalesced_": _spec("all_reduce", "inputs", RETURN),
    "_c10d_functional.broadcast": _spec("broadcast", "input", RETURN),
    "_c10d_functional.broadcast_": _spec("broadcast", "input", RETURN),
    "_c10d_functional.all_gather_into_tensor": _spec("all_gather", "input", RETURN),
    "_c10d_functional.all_gather_into_tensor_out": _spec("all_gather", "input", RETURN),
    "_c10d_functional.all_gather_into_tensor_coalesced": _spec("all_gather", "inputs", RETURN),
    "_c10d_functional.reduce_scatter_tensor": _spec("reduce_scatter", "input", RETURN),
    "_c10d_functional.reduce_scatter_tensor_out": _spec("reduce_scatter", "input", RETURN),
    "_c10d_functional.reduce_scatter_tensor_coalesced": _spec("reduce_scatter", "inputs", RETURN),
    "_c10d_functional.all_to_all_single": _spec("all_to_all", "input", RETURN),
    "_c10d_functional.isend": _spec("send", "tensor"),
    "_c10d_functional.irecv": _spec("recv", "", RETURN),
}
IGNORED_OPS = frozenset(
    {
        "c10d.check_for_nan",
        "_c10d_functional.wait_tensor",
        "_c10d_functional._wrap_tensor_autograd",
    }
)
BATCH_P2P_OP = "_c10d_functional.batch_p2p_ops"
UNKNOWN_KIND = "unknown"
_MISSING = object()  # the patched attribute was inherited, not the target's own


@dataclass(frozen=True)
class CommRecord:
    """One communication call as this rank saw it."""

    op: str  # "c10d.allreduce_", "_c10d_functional.all_gather_into_tensor", or a seam's name
    kind: str  # "all_reduce", "send", ... for operators; the seam's name for seams
    group_size: int | None
    dtype: str | None
    bytes_in: int
    bytes_out: int
    source: str = SOURCE_DISPATCH


@dataclass
class CommLedger:
    """Every ``CommRecord`` seen while the ledger was open; picklable, so ranks can return it."""

    records: list[CommRecord] = field(default_factory=list)

    def select(self, op: str | None = None) -> list[CommRecord]:
        """Records whose operator, bare operator name or kind is ``op`` (all when None)."""
        if op is None:
            return list(self.records)
        return [r for r in self.records if op in (r.op, r.kind, r.op.rsplit(".", 1)[-1])]

    def count(self, op: str | None = None) -> int:
        return len(self.select(op))

    def bytes(self, op: str | None = None, *, direction: Direction = "in") -> int:
        """Bytes this rank handed over ("in", default), received ("out"), or both summed."""
        chosen = self.select(op)
        sent = sum(r.bytes_in for r in chosen)
        received = sum(r.bytes_out for r in chosen)
        return {"in": sent, "out": received, "both": sent + received}[direction]


_ACTIVE: contextvars.ContextVar[tuple[CommLedger, ...]] = contextvars.ContextVar(
    "probewatch_comm_ledgers", default=()
)


@contextmanager
def comm_ledger() -> Iterator[CommLedger]:
    """Record every c10d and functional collective (send/recv included) run in the block."""
    ledger = CommLedger()
    token = _ACTIVE.set((*_ACTIVE.get(), ledger))
    try:
        with _CommRecorder(ledger):
            yield ledger
    finally:
        _ACTIVE.reset(token)


class _CommRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self, ledger: CommLedger) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.ledger = ledger

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.namespace in COMM_NAMESPACES:
            record = record_for(func, args, kwargs, out)
            if record is not None:
                self.ledger.records.append(record)
        return out


def record_for(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
) -> CommRecord | None:
    """The ledger entry of one dispatched communication operator (None when it moves nothing)."""
    name = f"{func.namespace}.{func._schema.name.split('::', 1)[1]}"
    if name in IGNORED_OPS:
        return None
    bound = _bind(func, args, kwargs)
    kind, sent, received = payload_of(name, bound, out)
    return CommRecord(
        op=name,
        kind=kind,
        group_size=_group_size(bound),
        dtype=_first_dtype([sent, received]),
        bytes_in=_nbytes(sent),
        bytes_out=_nbytes(received),
    )


def payload_of(name: str, bound: dict[str, Any], out: Any) -> tuple[str, list[Any], list[Any]]:
    """(kind, tensors this rank hands over, tensors it receives) of one operator call."""
    if name == BATCH_P2P_OP:
        pairs = list(zip(bound["op_list"], bound["tensors"], strict=True))
        sent = [tensor for op, tensor in pairs if "send" in op]
        return "batch_p2p", sent, [tensor for op, tensor in pairs if "recv" in op]
    spec = OP_TABLE.get(name)
    if spec is None:
        # An operator this table does not know yet: count every tensor argument as
        # sent rather than report nothing.
        return UNKNOWN_KIND, list(bound.values()), []
    received = [out if arg == RETURN else bound.get(arg) for arg in spec.bytes_out]
    return spec.kind, [bound.get(arg) for arg in spec.bytes_in], received


def _bind(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    names = [argument.name for argument in func._schema.arguments]
    return {**dict(zip(names, args, strict=False)), **kwargs}


def _nbytes(tree: Any) -> int:
    leaves = pytree.tree_leaves(tree)
    return sum(t.nelement() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


def _first_dtype(tree: Any) -> str | None:
    for leaf in pytree.tree_leaves(tree):
        if isinstance(leaf, torch.Tensor):
            return str(leaf.dtype).removeprefix("torch.")
    return None


def _group_size(bound: dict[str, Any]) -> int | None:
    size = bound.get("group_size")
    if isinstance(size, int):
        return size
    group = bound.get("process_group")
    if group is not None:
        return int(torch.distributed.ProcessGroup.unbox(group).size())
    name = bound.get("group_name")
    if isinstance(name, str):
        # Functional collectives name their group; torch resolves names privately.
        from torch.distributed import distributed_c10d

        return int(distributed_c10d._resolve_process_group(name).size())  # type: ignore[attr-defined,arg-type]
    return None


@contextmanager
def comm_seam(
    target: Any,
    attr: str,
    size_fn: Callable[..., int],
    *,
    op: str | None = None,
    ledger: CommLedger | None = None,
) -> Iterator[None]:
    """Count calls of ``target.attr`` (a repository's own transport) into the open ledgers.

    ``size_fn`` gets the call's arguments (``self`` included for a method patched
    on its class) and returns the bytes sent; for a generator function it gets
    each yielded item instead, so a weight-sync generator is counted per tensor.
    The attribute is restored when the block exits.
    """
    ledgers = (ledger,) if ledger is not None else _ACTIVE.get()
    if not ledgers:
        raise KitUsageError("comm_seam needs an open comm_ledger() or an explicit ledger=")
    if not hasattr(target, attr):
        raise KitUsageError(f"{target!r} has no attribute {attr!r} to count as a transport")
    name = op or attr
    original_raw = vars(target).get(attr, _MISSING) if hasattr(target, "__dict__") else _MISSING
    wrapper = _seam_wrapper(getattr(target, attr), size_fn, name, ledgers)
    if isinstance(original_raw, staticmethod | classmethod):
        # getattr already bound (or unwrapped) it: the wrapper must not be bound again.
        wrapper = staticmethod(wrapper)
    setattr(target, attr, wrapper)
    try:
        yield
    finally:
        _restore(target, attr, original_raw)


def _restore(target: Any, attr: str, original_raw: Any) -> None:
    if original_raw is _MISSING:
        delattr(target, attr)  # it was inherited: removing the patch uncovers it again
    else:
        setattr(target, attr, original_raw)


def _seam_wrapper(
    original: Callable[..., Any],
    size_fn: Callable[..., int],
    name: str,
    ledgers: tuple[CommLedger, ...],
) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(original):

        @functools.wraps(original)
        def generator_wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for item in original(*args, **kwargs):
                _record_seam(ledgers, name, size_fn(item))
                yield item

        return generator_wrapper

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _record_seam(ledgers, name, size_fn(*args, **kwargs))
        return original(*args, **kwargs)

    return wrapper


def _record_seam(ledgers: tuple[CommLedger, ...], name: str, size: int) -> None:
    record = CommRecord(
        op=name,
        kind=name,
        group_size=None,
        dtype=None,
        bytes_in=int(size),
        bytes_out=0,
        source=SOURCE_SEAM,
    )
    for ledger in ledgers:
        ledger.records.append(record)
