"""comm_ledger and comm_seam: a weight sync that sends everything is caught; bytes per op are exact."""

from __future__ import annotations

import pytest
import torch  # imported before any in-process pytester run: torch cannot be imported twice
import torch.distributed as dist

from probe_builder.kit import CommLedger, KitUsageError, comm_ledger, comm_seam, run_ranks
from probe_builder.kit.comm import payload_of

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

WEIGHT_SYNC_PROBE = """
import torch
import torch.distributed as dist
from probe_builder.kit import comm_ledger

LINEAR_BYTES = 8 * 8 * 4

def make_model(fill=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(16, 8), torch.nn.Linear(8, 8, bias=False))
    model[0].weight.requires_grad_(False)  # frozen: never changes after the first sync
    if fill is not None:
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(fill)
    return model

class FullSync:
    # Sends every parameter on every sync: final weights are right, traffic is not.
    def __init__(self, model):
        self.params = list(model.parameters())

    def sync(self, dst):
        dist.send(torch.ones(len(self.params), dtype=torch.uint8), dst)
        for p in self.params:
            dist.send(p.detach(), dst)

class IncrementalSync(FullSync):
    def __init__(self, model):
        super().__init__(model)
        self.sent = {}

    def sync(self, dst):
        changed = [self.sent.get(i) != p._version for i, p in enumerate(self.params)]
        dist.send(torch.tensor(changed, dtype=torch.uint8), dst)
        for i, p in enumerate(self.params):
            if changed[i]:
                dist.send(p.detach(), dst)
                self.sent[i] = p._version

def receive(params, src):
    header = torch.empty(len(params), dtype=torch.uint8)
    dist.recv(header, src)
    for flag, p in zip(header.tolist(), params):
        if flag:
            buffer = torch.empty_like(p)
            dist.recv(buffer, src)
            with torch.no_grad():
                p.copy_(buffer)

def update(model):
    with torch.no_grad():
        model[1].weight.add_(1.0)

def sync_twice(rank, world_size, impl):
    if rank == 1:
        params = list(make_model(fill=0.0).parameters())
        receive(params, 0)
        receive(params, 0)
        return [p.detach().clone() for p in params]
    model = make_model()
    syncer = {"full": FullSync, "incremental": IncrementalSync}[impl](model)
    syncer.sync(dst=1)
    update(model)
    with comm_ledger() as ledger:
        syncer.sync(dst=1)
    return ledger

def check(ranks, impl):
    ledger, received = ranks(sync_twice, 2, timeout_s=60, args=(impl,))
    expected = make_model()
    update(expected)
    # What the PR's own tests check: the receiver ends with the trainer's weights.
    assert all(torch.equal(a, b) for a, b in zip(received, expected.parameters()))
    # What the promise says: after the first sync, only the changed linear weight travels.
    assert ledger.count("send") == 2
    assert ledger.bytes("send") == 2 + LINEAR_BYTES

def test_incremental_sync_passes(ranks):
    check(ranks, "incremental")

def test_full_sync_is_caught(ranks):
    check(ranks, "full")
"""


def test_comm_ledger_catches_a_weight_sync_that_sends_every_parameter(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_weight_sync_probe=WEIGHT_SYNC_PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_full_sync_is_caught*", "*assert 3 == 2*"])


def _every_kind_of_call(rank: int, world_size: int) -> CommLedger:
    import torch.distributed._functional_collectives as funcol

    group = dist.group.WORLD
    with comm_ledger() as ledger:
        dist.all_reduce(torch.ones(4))  # 16 bytes
        dist.broadcast(torch.ones(2, dtype=torch.float64), src=0)  # 16 bytes
        dist.all_gather([torch.empty(3) for _ in range(world_size)], torch.ones(3))  # 12 -> 24
        dist.reduce_scatter_tensor(torch.empty(2), torch.ones(4))  # 16 -> 8
        if rank == 0:
            dist.send(torch.ones(5, dtype=torch.int32), dst=1)  # 20 bytes out
        else:
            dist.recv(torch.empty(5, dtype=torch.int32), src=0)  # 20 bytes in
        funcol.all_reduce(torch.ones(8), "sum", group).wait()  # 32 bytes
        funcol.all_gather_tensor(torch.ones(2), 0, group).wait()  # 8 -> 16
        funcol.reduce_scatter_tensor(torch.ones(6), "sum", 0, group).wait()  # 24 -> 12
        dist.barrier()
    return ledger


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> list[CommLedger]:
    """One two-rank run shared by the byte-accounting tests (spawning ranks is slow)."""
    store = tmp_path_factory.mktemp("comm")
    return run_ranks(_every_kind_of_call, 2, timeout_s=90, store_dir=store)


EXPECTED_BYTES = [
    # (op, bytes in, bytes out) on rank 0; rank 1 differs only for send/recv.
    ("c10d.allreduce_", 16, 16),
    ("c10d.broadcast_", 16, 16),
    ("c10d.allgather_", 12, 24),
    ("c10d._reduce_scatter_base_", 16, 8),
    ("c10d.send", 20, 0),
    ("_c10d_functional.all_reduce", 32, 32),
    ("_c10d_functional.all_gather_into_tensor", 8, 16),
    ("_c10d_functional.reduce_scatter_tensor", 24, 12),
    ("c10d.barrier", 0, 0),
]


def test_classic_and_functional_collectives_are_recorded_with_their_bytes_in_and_out(
    ledgers: list[CommLedger],
) -> None:
    sender = ledgers[0]
    assert [(r.op, r.bytes_in, r.bytes_out) for r in sender.records] == EXPECTED_BYTES
    assert {r.group_size for r in sender.records} == {2}
    assert sender.records[1].dtype == "float64"
    assert sender.records[-1].dtype is None  # a barrier moves no payload


def test_point_to_point_counts_what_each_rank_sent_and_received(
    ledgers: list[CommLedger],
) -> None:
    sender, receiver = ledgers
    assert (sender.count("send"), sender.count("recv")) == (1, 0)
    assert (receiver.count("send"), receiver.count("recv")) == (0, 1)
    assert receiver.bytes("recv", direction="out") == 20
    assert receiver.bytes("recv") == 0  # nothing handed over by the receiving rank


def test_count_and_bytes_select_by_kind_or_operator_name(ledgers: list[CommLedger]) -> None:
    sender = ledgers[0]
    assert sender.count("all_reduce") == 2  # classic and functional
    assert sender.count("allreduce_") == 1
    assert sender.count("_c10d_functional.all_reduce") == 1
    assert sender.bytes("all_gather", direction="both") == 12 + 24 + 8 + 16
    assert sender.bytes() == sum(inp for _, inp, _ in EXPECTED_BYTES)


def test_batched_point_to_point_splits_sent_and_received_tensors() -> None:
    sent, received = torch.ones(3), torch.empty(5, dtype=torch.float64)
    kind, out_tensors, in_tensors = payload_of(
        "_c10d_functional.batch_p2p_ops",
        {"op_list": ["isend", "irecv"], "tensors": [sent, received]},
        None,
    )
    assert (kind, out_tensors, in_tensors) == ("batch_p2p", [sent], [received])


def test_an_operator_the_table_does_not_know_counts_every_tensor_as_sent() -> None:
    kind, sent, received = payload_of("c10d.future_collective_", {"tensors": [torch.ones(4)]}, None)
    assert kind == "unknown" and received == []
    assert sum(t.nelement() for t in sent[0]) == 4


class Transport:
    """A repository's own transport, invisible to the dispatcher (plain Python copies)."""

    def __init__(self) -> None:
        self.received: dict[str, torch.Tensor] = {}

    def send(self, name: str, tensor: torch.Tensor) -> None:
        self.received[name] = tensor.clone()

    def stream(self, named: dict[str, torch.Tensor]):  # a weight-sync generator
        yield from named.items()


def _payload(self: Transport, name: str, tensor: torch.Tensor) -> int:
    return tensor.nelement() * tensor.element_size()


def test_comm_seam_counts_a_repository_transport_into_the_open_ledger_and_restores_it() -> None:
    transport = Transport()
    original = vars(Transport)["send"]
    with comm_ledger() as ledger, comm_seam(Transport, "send", _payload, op="weight_push"):
        transport.send("w", torch.ones(10))
        transport.send("b", torch.ones(2, dtype=torch.float16))
    assert ledger.count("weight_push") == 2
    assert ledger.bytes("weight_push") == 40 + 4
    assert vars(Transport)["send"] is original
    transport.send("after", torch.ones(1))
    assert ledger.count() == 2  # the seam is gone once the block exits


def test_comm_seam_counts_each_item_a_generator_yields() -> None:
    named = {"a": torch.ones(3), "b": torch.ones(5)}

    def size(item: tuple[str, torch.Tensor]) -> int:
        return item[1].nelement() * item[1].element_size()

    with comm_ledger() as ledger, comm_seam(Transport, "stream", size):
        assert [name for name, _ in Transport().stream(named)] == ["a", "b"]
    assert [r.bytes_in for r in ledger.records] == [12, 20]


def test_comm_seam_on_an_instance_removes_its_patch_afterwards() -> None:
    transport = Transport()
    with comm_ledger() as ledger, comm_seam(transport, "send", lambda n, t: 7):
        transport.send("w", torch.ones(1))
    assert ledger.bytes() == 7
    assert "send" not in vars(transport)


class Wire:
    @staticmethod
    def push(tensor: torch.Tensor) -> int:
        return tensor.nelement()

    @classmethod
    def pull(cls, tensor: torch.Tensor) -> str:
        return cls.__name__


def test_comm_seam_wraps_static_and_class_methods_without_rebinding_them() -> None:
    static, klass = vars(Wire)["push"], vars(Wire)["pull"]
    with (
        comm_ledger() as ledger,
        comm_seam(Wire, "push", lambda t: 4 * t.nelement()),
        comm_seam(Wire, "pull", lambda t: 1),
    ):
        assert Wire().push(torch.ones(3)) == 3
        assert Wire.pull(torch.ones(1)) == "Wire"
    assert [(r.op, r.bytes_in) for r in ledger.records] == [("push", 12), ("pull", 1)]
    assert vars(Wire)["push"] is static and vars(Wire)["pull"] is klass


def test_comm_seam_without_an_open_ledger_is_a_usage_error() -> None:
    with pytest.raises(KitUsageError, match="open comm_ledger"), comm_seam(Transport, "send", len):
        pass


def test_comm_seam_names_a_missing_attribute() -> None:
    with (
        comm_ledger(),
        pytest.raises(KitUsageError, match="no attribute 'push'"),
        comm_seam(Transport, "push", len),
    ):
        pass
