"""Agreement of the per-promise verdict with the hand-labelled verdicts, dev beside holdout.

For every item of ``verdicts.yaml`` the PR's merge commit is looked up in a
git mirror of its repository (``--mirror owner/name=PATH``; items whose
repository has no mirror, or whose commit the mirror lacks, are skipped and
counted). The diff against the first parent is split with the repository's
test globs, the test patch profiled and the contract read, as
``build_material`` does, and the *labelled* promises (category and quote) are
judged; nothing runs. Printed: agreement overall and per category; how often
``checked`` is said and how often it is right, overall and by the step that found
the check (a test of a linked symbol, of the code behind it, of a function that calls
it, of the code beside it, of a linked symbol on other changed code, a test named for
the promise, a test of the change for the title's own promise, a run compared with
golden values: counts only, so the holdout's may be printed); and the report's claim, "not
checked" (exercised or unchecked) for resource, state and mode promises, as
precision and recall against the labels; then the same per repository, when
several have a mirror.

The holdout is sealed: its figures are printed in aggregate only, and
``--misses`` lists dev disagreements only, each with the rules' evidence (the
assertion that checks it, or why none does) above the reader's. Usage::

    python -m bench.verdict_eval --mirror volcengine/verl=PATH \\
        --mirror NVIDIA/Megatron-LM=PATH [--file NAME] [--misses] [--intervals]
        [--jobs N] [--cache DIR]

``--jobs N`` reads N commits at once and ``--cache DIR`` keeps what was read at each
commit, so that a change to the verdict rules alone is measured again in seconds
(:mod:`bench.readings`).

Below the table, the verdicts said against those labelled (rows said, columns labelled),
dev beside holdout: which way the rules part from the readers (counts only, so the
holdout's may be printed).

``--intervals`` adds each rate's 90% interval over PRs drawn again with
replacement (``bench/resample.py``), per split.

``--file NAME`` judges only the items of one item file: a batch's verdicts,
labelled before the rules ran on them, are measured this way once first.

``--agreement`` scores a second reader's verdicts (``agreement/verdicts.yaml``,
labelled from the same diffs blind to these labels and to the rules) against
the labels, and, with mirrors, the rules on the same promises against each
reader: how far two readers of one diff agree is the most the rules can be
expected to reach against one of them.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.args import positive
from bench.promise_eval import (
    AGREEMENT_DIR,
    DEFAULT_DIR,
    DEV,
    HOLDOUT,
    UNKNOWN_FILE,
    VERDICTS_FILE,
    AgreementError,
    LabelError,
    check_item,
    item_files,
    item_name,
    load_labelled_set,
    read_labels,
)
from bench.readings import TEST_GLOBS, CacheError, ReadingCache, read_commits
from bench.resample import LEVEL, RESAMPLES, Pair, intervals, render_interval
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.linking import CodeUnderTest
from probe_builder.promises.verdicts import CHECKED_VIA, PromiseCheck, judge_promises
from task_registry.types import PromiseCategory, PromiseVerdict

CLAIM_CATEGORIES = (
    PromiseCategory.memory,
    PromiseCategory.time,
    PromiseCategory.traffic,
    PromiseCategory.state,
    PromiseCategory.mode,
)
MISSES_REFUSED = "--misses lists dev disagreements only: the holdout is sealed while rules change"
NO_MIRROR = (
    "no mirror of {repos} given or found: nothing to measure (pass --mirror owner/name=PATH)"
)
NO_VERDICTS = "no labelled verdicts at {path} (pass --dir the labelled set's folder)"
NO_SECOND_READER = "--agreement: no second reader's verdicts in {path} (label some there first)"
SECOND_UNKNOWN = (
    "{path}: item {id!r} has no labelled verdicts in split {split!r} "
    "(a second reader labels only items of verdicts.yaml, in their split)"
)
SECOND_PROMISES = (
    "{path}: item {id!r} must carry exactly the labelled promises of verdicts.yaml "
    "(same category and quote); differs at {quote!r}"
)
_ID = re.compile(r"^(?P<repo>[^#!@]+)(?P<kind>[#!@])(?P<ref>\w+)$")
Judge = Callable[[Sequence[ExtractedPromise], CodeUnderTest], Sequence[PromiseCheck]]
# Per item, the step that found each "checked" said ("" for any other verdict).
Steps = Mapping[str, Sequence[str]]
# Per item, the rules' evidence for each verdict (where the check is, or why there is none).
Reasons = Mapping[str, Sequence[str]]
# How much of each side's evidence a listed disagreement shows.
EVIDENCE_CHARS = 200


@dataclass(frozen=True)
class LabelledVerdict:
    category: PromiseCategory
    quote: str
    verdict: PromiseVerdict
    evidence: str = field(default="", compare=False)  # the reader's line: which test, and why


@dataclass(frozen=True)
class VerdictItem:
    id: str
    split: str
    title: str
    promises: tuple[LabelledVerdict, ...]

    @property
    def repository(self) -> str:
        match = _ID.match(self.id)
        return match.group("repo") if match else self.id


def load_verdict_items(directory: Path = DEFAULT_DIR) -> list[VerdictItem]:
    """The labelled verdicts, with each item's title from its repository's item file;
    LabelError for a folder without them or a verdict the bench cannot read."""
    titles = {item.id: item.title for item in load_labelled_set(directory)}
    path = directory / VERDICTS_FILE
    if not path.exists():
        raise LabelError(NO_VERDICTS.format(path=path))
    return _verdict_items(path, titles)


VERDICT_KEYS = ("id", "split", "promises")
VERDICT_VALUES = frozenset(v.value for v in PromiseVerdict)


def _verdict_items(path: Path, titles: Mapping[str, str]) -> list[VerdictItem]:
    raw_items = read_labels(path)
    for index, raw in enumerate(raw_items):
        check_item(path, index, raw, VERDICT_KEYS)
        for promise in raw["promises"] or ():
            if promise.get("verdict") not in VERDICT_VALUES:
                verdicts = ", ".join(v.value for v in PromiseVerdict)
                raise LabelError(
                    f"{item_name(path, index, raw)}: verdict "
                    f"{promise.get('verdict')!r} is not one of {verdicts}"
                )
    return [
        VerdictItem(
            raw["id"],
            raw["split"],
            titles.get(raw["id"], ""),
            tuple(
                LabelledVerdict(
                    PromiseCategory(p["category"]),
                    p["quote"],
                    PromiseVerdict(p["verdict"]),
                    " ".join(str(p.get("evidence", "")).split()),
                )
                for p in raw["promises"] or ()
            ),
        )
        for raw in raw_items
    ]


def load_second_reader(
    items: Sequence[VerdictItem], directory: Path = DEFAULT_DIR
) -> list[VerdictItem]:
    """A second reader's verdicts (``agreement/verdicts.yaml``) on promises of labelled items:
    each item must be one of ``items``, in the same split, with the same promises."""
    path = directory / AGREEMENT_DIR / VERDICTS_FILE
    if not path.exists():
        return []
    known = {(i.id, i.split): i for i in items}
    second = _verdict_items(path, {})
    for item in second:
        labelled = known.get((item.id, item.split))
        if labelled is None:
            raise AgreementError(
                SECOND_UNKNOWN.format(path=path.name, id=item.id, split=item.split)
            )
        theirs = {(p.category, p.quote) for p in labelled.promises}
        mine = {(p.category, p.quote) for p in item.promises}
        differing = sorted(q for _, q in theirs ^ mine)
        if differing or len(item.promises) != len(labelled.promises):
            quote = differing[0] if differing else "(a promise given twice)"
            raise AgreementError(SECOND_PROMISES.format(path=path.name, id=item.id, quote=quote))
    return second


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else ""


@dataclass
class CommitIndex:
    """Subjects of every commit of a mirror, read once."""

    repo: Path
    subjects: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        log = _git(self.repo, "log", "--all", "--no-merges", "--format=%H %s")
        self.subjects = [tuple(line.split(" ", 1)) for line in log.splitlines() if " " in line]  # type: ignore[misc]

    def find(self, item: VerdictItem) -> str | None:
        """The item's commit: ``#N`` by ``(#N)`` in the subject, ``!N`` by its number or
        its title, ``@sha`` by the id itself."""
        match = _ID.match(item.id)
        if match is None:
            return None
        kind, ref = match.group("kind"), match.group("ref")
        if kind == "@":
            return _git(self.repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
        needles = [f"(#{ref})"] if kind == "#" else [f"!{ref} ", item.title]
        for needle in needles:
            found = [sha for sha, subject in self.subjects if needle and needle in subject]
            if found:
                return found[-1]  # the oldest: a later revert or cherry-pick quotes the subject
        return None


@dataclass
class Tally:
    agree: int = 0
    total: int = 0

    @property
    def rate(self) -> float:
        return self.agree / self.total if self.total else 1.0

    def add(self, hit: bool) -> None:
        self.agree += hit
        self.total += 1

    def cell(self) -> str:
        rate = f"{self.rate:4.2f}" if self.total else " n/a"  # nothing judged: no rate
        return f"{rate} {self.agree:3d}/{self.total:<3d}"


@dataclass
class VerdictScore:
    items: int = 0
    skipped: int = 0
    agreement: Tally = field(default_factory=Tally)
    per_category: dict[PromiseCategory, Tally] = field(
        default_factory=lambda: {c: Tally() for c in PromiseCategory}
    )
    checked_right: Tally = field(default_factory=Tally)  # over every "checked" said
    checked_said: Tally = field(default_factory=Tally)  # over every promise judged
    # How many promises the tests check, and how the rules' "checked" falls on each side:
    # "checked" right is found over labelled (how much the tests check) against false.
    checked_labelled: Tally = field(default_factory=Tally)  # over every promise judged
    checked_found: Tally = field(default_factory=Tally)  # over the promises labelled checked
    checked_false: Tally = field(default_factory=Tally)  # over the others: said checked
    # "checked" right, by the step that found the check (given only for the rules)
    checked_via: dict[str, Tally] = field(
        default_factory=lambda: {step: Tally() for step in CHECKED_VIA}
    )
    claim_precision: Tally = field(default_factory=Tally)  # over "not checked" said
    claim_recall: Tally = field(default_factory=Tally)  # over "not checked" labelled
    misses: list[str] = field(default_factory=list)
    # (said, labelled) -> promises: which way the rules part from the labels
    confusion: Counter[tuple[PromiseVerdict, PromiseVerdict]] = field(default_factory=Counter)

    def add(
        self,
        item: VerdictItem,
        label: LabelledVerdict,
        said: PromiseVerdict,
        via: str = "",
        why: str = "",
    ) -> None:
        hit = said is label.verdict
        self.confusion[(said, label.verdict)] += 1
        self.agreement.add(hit)
        self.per_category[label.category].add(hit)
        self.checked_said.add(said is PromiseVerdict.checked)
        self.checked_labelled.add(label.verdict is PromiseVerdict.checked)
        if label.verdict is PromiseVerdict.checked:
            self.checked_found.add(said is PromiseVerdict.checked)
        else:
            self.checked_false.add(said is PromiseVerdict.checked)
        if said is PromiseVerdict.checked:
            self.checked_right.add(label.verdict is PromiseVerdict.checked)
            if via in self.checked_via:
                self.checked_via[via].add(label.verdict is PromiseVerdict.checked)
        if label.category in CLAIM_CATEGORIES:
            said_not = said is not PromiseVerdict.checked
            labelled_not = label.verdict is not PromiseVerdict.checked
            if said_not:
                self.claim_precision.add(labelled_not)
            if labelled_not:
                self.claim_recall.add(said_not)
        if not hit:
            self.misses.append(_miss(item, label, said, why))


def rule_checks(
    items: Sequence[VerdictItem],
    mirrors: Mapping[str, Path],
    judge: Judge = judge_promises,
    test_globs: Sequence[str] = TEST_GLOBS,
    *,
    jobs: int = 1,
    cache: ReadingCache | None = None,
) -> dict[str, Sequence[PromiseCheck] | None]:
    """The rules' check of each item's labelled promises, in their order; None for an item
    whose repository has no mirror or whose commit the mirror lacks. Commits are read
    ``jobs`` at a time, and kept in ``cache`` (:mod:`bench.readings`)."""
    indexes = {repo: CommitIndex(path) for repo, path in mirrors.items()}
    checks: dict[str, Sequence[PromiseCheck] | None] = {}
    at_commit: dict[tuple[Path, str], list[VerdictItem]] = {}
    for item in items:
        index = indexes.get(item.repository)
        commit = index.find(item) if index is not None else None
        checks[item.id] = None
        if index is not None and commit:
            at_commit.setdefault((index.repo, commit), []).append(item)
    # each reading judged as it comes, so that one is held at a time
    for key, code in read_commits(list(at_commit), test_globs, jobs=jobs, cache=cache):
        for item in at_commit[key]:
            checks[item.id] = judge(as_extracted(item), code)
    return checks


def verdicts_of(
    checks: Mapping[str, Sequence[PromiseCheck] | None],
) -> dict[str, Sequence[PromiseVerdict] | None]:
    return {i: None if c is None else [k.verdict for k in c] for i, c in checks.items()}


def steps_of(checks: Mapping[str, Sequence[PromiseCheck] | None]) -> dict[str, Sequence[str]]:
    return {i: [k.via for k in c] for i, c in checks.items() if c is not None}


def reasons_of(checks: Mapping[str, Sequence[PromiseCheck] | None]) -> dict[str, Sequence[str]]:
    return {i: [k.evidence for k in c] for i, c in checks.items() if c is not None}


def _miss(item: VerdictItem, label: LabelledVerdict, said: PromiseVerdict, why: str) -> str:
    """One disagreement: the promise, then the rules' evidence and the reader's below it
    (each where known), so that which side misread the test shows without opening the diff."""
    said_labelled = f"said {said}, labelled {label.verdict}"
    lines = [f"{item.id} {label.category} {said_labelled}: {label.quote[:90]}"]
    lines += [f"    rules: {why[:EVIDENCE_CHARS]}"] if why else []
    lines += [f"    label: {label.evidence[:EVIDENCE_CHARS]}"] if label.evidence else []
    return "\n".join(lines)


def as_extracted(item: VerdictItem) -> list[ExtractedPromise]:
    """The labelled promises as the extractor gives them: a quote from the title at the
    title's position (0), any other after it."""
    title = " ".join(item.title.split())
    return [
        ExtractedPromise(
            category=p.category,
            quote=p.quote,
            position=0 if " ".join(p.quote.split()) in title else 1,
        )
        for p in item.promises
    ]


def score(
    items: Sequence[VerdictItem],
    said: Mapping[str, Sequence[PromiseVerdict] | None],
    steps: Steps | None = None,
    reasons: Reasons | None = None,
) -> VerdictScore:
    """Verdicts said on each item's promises (by the rules or a reader) against its labels;
    with ``steps``, the rules' "checked" right by the step that found each; with
    ``reasons``, each disagreement listed with the rules' evidence."""
    result = VerdictScore()
    for item in items:
        verdicts = said.get(item.id)
        if verdicts is None:
            result.skipped += 1
            continue
        result.items += 1
        vias = (steps or {}).get(item.id) or [""] * len(verdicts)
        whys = (reasons or {}).get(item.id) or [""] * len(verdicts)
        for label, verdict, via, why in zip(item.promises, verdicts, vias, whys, strict=True):
            result.add(item, label, verdict, via, why)
    return result


def evaluate(
    items: Sequence[VerdictItem],
    mirrors: Mapping[str, Path],
    judge: Judge = judge_promises,
    test_globs: Sequence[str] = TEST_GLOBS,
) -> VerdictScore:
    checks = rule_checks(items, mirrors, judge, test_globs)
    return score(items, verdicts_of(checks), steps_of(checks))


def agreement_report(
    items: Sequence[VerdictItem],
    second: Sequence[VerdictItem],
    mirrors: Mapping[str, Path],
    judge: Judge = judge_promises,
    *,
    jobs: int = 1,
    cache: ReadingCache | None = None,
) -> str:
    """The second reader against the set's labels; with mirrors, the rules on the same
    promises against each of the two."""
    read = {i.id for i in second}
    subsets = {s: [i for i in items if i.split == s and i.id in read] for s in (DEV, HOLDOUT)}
    reader = {s: score(subsets[s], _verdicts(_in_order(second, subsets[s]))) for s in subsets}
    tables = [("second reader vs the set's labels", reader)]
    if mirrors:
        chosen = [*subsets[DEV], *subsets[HOLDOUT]]
        checks = rule_checks(chosen, mirrors, judge, jobs=jobs, cache=cache)
        rules, steps = verdicts_of(checks), steps_of(checks)
        tables += [
            (
                "rules vs the set's labels, same promises",
                {s: score(subsets[s], rules, steps) for s in subsets},
            ),
            (
                "rules vs the second reader",
                {s: score(_in_order(second, subsets[s]), rules, steps) for s in subsets},
            ),
        ]
    return "\n\n".join(f"== {name}\n{render(t[DEV], t[HOLDOUT])}" for name, t in tables)


def _in_order(reader: Sequence[VerdictItem], items: Sequence[VerdictItem]) -> list[VerdictItem]:
    """The reader's items with their promises in the labelled items' order (the rules judged
    the promises in that order)."""
    by_id = {i.id: i for i in reader}
    ordered = []
    for item in items:
        verdicts = {(p.category, p.quote): p.verdict for p in by_id[item.id].promises}
        promises = tuple(replace(p, verdict=verdicts[(p.category, p.quote)]) for p in item.promises)
        ordered.append(replace(item, promises=promises))
    return ordered


def _verdicts(items: Sequence[VerdictItem]) -> dict[str, Sequence[PromiseVerdict] | None]:
    return {i.id: [p.verdict for p in i.promises] for i in items}


def _tallies(result: VerdictScore) -> list[tuple[str, Tally]]:
    """The table's rows, in order."""
    return [
        ("agreement", result.agreement),
        *((f"  {c}", result.per_category[c]) for c in PromiseCategory),
        ("'checked' right", result.checked_right),
        *((f"  via {step}", result.checked_via[step]) for step in CHECKED_VIA),
        ("'checked' said", result.checked_said),
        ("'checked' labelled", result.checked_labelled),
        ("'checked' found", result.checked_found),
        ("'checked' false", result.checked_false),
        ("'not checked' P", result.claim_precision),
        ("'not checked' R", result.claim_recall),
    ]


CLAIM_NOTE = "'not checked': exercised or unchecked, for resource, state and mode promises"
# The target for "checked" right, against which each split's false share is weighed.
CHECKED_RIGHT_TARGET = 0.90
FALSE_NOTE = (
    "'checked' false: said of a promise labelled exercised or unchecked; 'checked' right "
    "{target:.2f} at the found rate and share labelled checked needs it at most {dev} | {holdout}"
)


def false_rate_for(target: float, score: VerdictScore) -> float | None:
    """The largest share of promises not labelled checked that the rules may call checked
    for their "checked" to be right ``target`` of the times, the share labelled checked and
    the share of those the rules find being what they are: found * labelled * (1 - target)
    / (target * (1 - labelled)). None where nothing is judged or every promise is checked."""
    labelled, found = score.checked_labelled, score.checked_found
    if not labelled.total or labelled.agree == labelled.total:
        return None
    share = labelled.rate
    return found.rate * share * (1 - target) / (target * (1 - share))


def render(dev: VerdictScore, holdout: VerdictScore) -> str:
    head = f"{'rate':>4s} {'n/total':>7s}"
    lines = [
        f"items judged: dev {dev.items} (skipped {dev.skipped}), "
        f"holdout {holdout.items} (skipped {holdout.skipped})",
        f"{'':20s} {'dev':^12s}   {'holdout':^12s}",
        f"{'':20s} {head}   {head}",
    ]
    lines += [
        f"{name:20s} {d.cell()}   {h.cell()}"
        for (name, d), (_, h) in zip(_tallies(dev), _tallies(holdout), strict=True)
    ]
    lines.append(CLAIM_NOTE)
    needed = [false_rate_for(CHECKED_RIGHT_TARGET, score) for score in (dev, holdout)]
    dev_needed, holdout_needed = ("n/a" if n is None else f"{n:.3f}" for n in needed)
    lines.append(
        FALSE_NOTE.format(target=CHECKED_RIGHT_TARGET, dev=dev_needed, holdout=holdout_needed)
    )
    lines += render_confusion(dev, holdout)
    return "\n".join(lines)


def render_confusion(dev: VerdictScore, holdout: VerdictScore) -> list[str]:
    """Rows: the verdict said; columns: the verdict labelled, dev beside holdout."""
    verdicts = list(PromiseVerdict)
    head = "".join(f"{v:>10s}" for v in verdicts)
    lines = [f"{'said / labelled':20s}{'dev':^30s} | {'holdout':^30s}", f"{'':20s}{head} | {head}"]
    for said in verdicts:
        cells = [
            "".join(f"{score.confusion[(said, labelled)]:10d}" for labelled in verdicts)
            for score in (dev, holdout)
        ]
        lines.append(f"{said!s:20s}{cells[0]} | {cells[1]}")
    return lines


def _ratios(
    items: Sequence[VerdictItem],
    said: Mapping[str, Sequence[PromiseVerdict] | None],
    steps: Steps | None = None,
) -> dict[str, list[Pair]]:
    """Each table row as one (agreeing, judged) pair per judged item, for resampling."""
    judged = [score([item], said, steps) for item in items if said.get(item.id) is not None]
    ratios: dict[str, list[Pair]] = {name: [] for name, _ in _tallies(VerdictScore())}
    for one in judged:
        for name, tally in _tallies(one):
            ratios[name].append((tally.agree, tally.total))
    return ratios


def render_intervals(
    items: Sequence[VerdictItem],
    said: Mapping[str, Sequence[PromiseVerdict] | None],
    steps: Steps | None = None,
) -> str:
    """The middle 90% of each rate over PRs drawn again from each split: how far a figure
    could move on other PRs like these."""
    dev, holdout = (
        intervals(_ratios([i for i in items if i.split == split], said, steps))
        for split in (DEV, HOLDOUT)
    )
    lines = [
        f"{LEVEL:.0%} intervals over PRs resampled ({RESAMPLES} draws)",
        f"{'':20s} {'dev':^11s}   {'holdout':^11s}",
    ]
    lines += [
        f"{name:20s} {render_interval(dev[name])}   {render_interval(holdout[name])}"
        for name, _ in _tallies(VerdictScore())
    ]
    return "\n".join(lines)


def _mirrors(pairs: Sequence[str]) -> dict[str, Path]:
    mirrors = {}
    for pair in pairs:
        repo, _, path = pair.partition("=")
        if not path or (not (Path(path) / "HEAD").exists() and not (Path(path) / ".git").exists()):
            continue
        mirrors[repo] = Path(path)
    return mirrors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=PATH")
    parser.add_argument("--split", choices=[DEV, HOLDOUT, "all"], default="all")
    parser.add_argument(
        "--file",
        metavar="NAME",
        help="only the items of this item file (a new batch's first measurement)",
    )
    parser.add_argument("--misses", action="store_true", help="list dev disagreements")
    parser.add_argument(
        "--agreement", action="store_true", help="a second reader's verdicts against the labels"
    )
    parser.add_argument(
        "--intervals",
        action="store_true",
        help="also each rate's 90%% interval over PRs resampled (the whole set)",
    )
    parser.add_argument(
        "--jobs", type=positive, default=1, help="commits read at once (one process each)"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="keep each commit's reading in DIR and reuse it while the readers are unchanged",
    )
    args = parser.parse_args(argv)
    if args.misses and args.split != DEV:
        parser.error(MISSES_REFUSED)
    try:
        cache = ReadingCache(args.cache) if args.cache is not None else None
    except CacheError as error:
        parser.error(str(error))
    try:
        items = every = load_verdict_items(args.dir)
    except LabelError as error:
        parser.error(str(error))
    if args.file is not None:
        known = [p.name for p in item_files(args.dir)]
        if args.file not in known:
            parser.error(
                UNKNOWN_FILE.format(name=args.file, directory=args.dir, known=", ".join(known))
            )
        ids = {i.id for i in load_labelled_set(args.dir, only=args.file)}
        items = [i for i in items if i.id in ids]
    mirrors = _mirrors(args.mirror)
    if args.agreement:
        try:
            second = load_second_reader(every, args.dir)
        except LabelError as error:  # an item it does not hold, or one it cannot read
            parser.error(str(error))
        if not second:
            parser.error(NO_SECOND_READER.format(path=args.dir / AGREEMENT_DIR / VERDICTS_FILE))
        print(agreement_report(items, second, mirrors, jobs=args.jobs, cache=cache))
        return 0
    if not mirrors:
        repos = ", ".join(sorted({i.repository for i in items}))
        print(NO_MIRROR.format(repos=repos))
        return 0
    wanted = [DEV, HOLDOUT] if args.split == "all" else [args.split]
    chosen = [i for i in items if i.split in wanted]
    checks = rule_checks(chosen, mirrors, jobs=args.jobs, cache=cache)
    said, steps = verdicts_of(checks), steps_of(checks)
    whole = _by_split(chosen, said, steps, reasons_of(checks))
    print(render(*whole))
    if args.intervals:
        print("\n" + render_intervals(chosen, said, steps))
    repositories = sorted({i.repository for i in chosen if i.repository in mirrors})
    for repository in repositories if len(repositories) > 1 else []:
        own = [i for i in chosen if i.repository == repository]
        print(f"\n== {repository}\n{render(*_by_split(own, said, steps))}")
    if args.misses:
        print("\n" + "\n".join(whole[0].misses))
    return 0


def _by_split(
    items: Sequence[VerdictItem],
    said: Mapping[str, Sequence[PromiseVerdict] | None],
    steps: Steps | None = None,
    reasons: Reasons | None = None,
) -> tuple[VerdictScore, VerdictScore]:
    """The dev and holdout scores of ``items`` (an empty score for a split not among them)."""
    dev, holdout = ([i for i in items if i.split == s] for s in (DEV, HOLDOUT))
    return score(dev, said, steps, reasons), score(holdout, said, steps, reasons)


if __name__ == "__main__":
    sys.exit(main())
