"""The phrase tables of the rule-based promise extractor, as data.

Each category has cue patterns: a sentence that matches one carries that
category. The other tables say when a sentence is not a promise at all (it
describes the PR's tests, docs or housekeeping, it is a command line, a
worked example, or a stated limitation) and when a cue is only a mention (a
CUDA graph named in passing is not a promise to work under one). Patterns
describe the domain's vocabulary: no table names a particular PR, quote or
path. ``bench/promise_eval.py`` measures them against the labelled set.
"""

from __future__ import annotations

import re

from task_registry.types import PromiseCategory


def rx(*alternatives: str) -> re.Pattern[str]:
    """One case-insensitive pattern from alternatives kept short enough to read."""
    return re.compile("|".join(alternatives), re.I)


_NEAR = r"\b[^.]{0,40}\b"  # two phrases in the same clause
# ... unless the first phrase's object is memory spent on the second ("reduces the memory
# required for the loss calculation")
_NEAR_NOT_MEMORY_FOR = r"(?!\s+(the )?memory (required|needed|used|spent) (for|by|in)\b)" + _NEAR
_COLLECTIVE = (
    r"(all[-_ ]?reduce|all[-_ ]?gather|reduce[-_ ]scatter|all[-_ ]?to[-_ ]?all|a2a|broadcast)"
)
# Either side of a device-host copy or synchronisation.
_HOST_DEVICE = r"(gpu|cpu|host|device|d|h)"
# "reduce" the verb, not a collective's name (reduce-scatter, all-reduce)
_REDUCE = r"(?<![-_])reduc(?!e[-_ ]?scatter)"
# A rate serving is measured by, and that rate raised ("increases QPS by a tenth").
_SERVING_RATE = r"(qps|tps|rps|tok/s|tokens?/s|requests?/s)"
_RAISED = r"(improv|increas|boost|higher)\w*"
# What a share gained may be of, other than time.
_NOT_TIME = r"\b(accura\w*|memory|acceptance|precision|recall|scores?)\b"
# Expensive work gated, limited, avoided, skipped or deferred.
_CUT_VERB = r"\b(gat(e|es|ed|ing)|limit\w*|avoid\w*|skip\w*|defer\w*)\b"
_EXPENSIVE_CUT = _CUT_VERB + r"[^.]{0,40}\bexpensive\b|\bexpensive\b[^.]{0,40}" + _CUT_VERB
# Activation (gradient) checkpointing recomputes; it saves no state.
_NOT_RECOMPUTE = r"(?<!activation )(?<!gradient )(?<!activation-)"
_CHECKPOINT = _NOT_RECOMPUTE + r"\b(checkpoint|ckpt|dist[-_ ]?ckpt)\w*"

# What is kept, dropped or restored across calls.
_STATE_BEHAVIOURS = (
    r"\b(reset|resets|resetting)\b|\binvalidat\w*|\blifecycle\b|\bstale\b",
    r"\b(prefix|kv)[- ]?caching\b|\bprefix[- ]cach\w*|\brefit\w*|^cache\b",
    r"\b(cache|kv) (hits?|reuse|retention|eviction)\b",
    # what a training run carries between steps; what two threads share and race on; a
    # session kept on one server across requests
    r"\b(optimizer|dataloader|rng|scheduler|sampler|trainer) states?\b"
    r"|\bdata[- ](corruption )?races?\b|\bsticky\b",
    r"\bcache (snapshots?|hits?|entries|invalidation)\b|\bevict\w*",
    r"\b(onload|reload)\w*\b|\bwake[-_ ]?up\b|\bawake\b|\bsleep\b|\bpaus(e|es|ing)\b",
    # what one call records, a later one replays (not a captured graph: replaying one is its
    # mode); what is built once and kept
    r"^(?![\s\S]*\b(cuda[- ]?)?graphs?\b)[\s\S]*\breplay(s|ed|ing)?\b(?! time)",
    r"\brecord\w*\b[^.]{0,80}\breplay\w*|\breplay\w*\b[^.]{0,60}\brecord\w*",
    r"\b(built|computed|created|initiali[sz]ed|allocated) once\b|\bcache (it|them)\b"
    r"|\bper[- ](device|step|request) cache\b",
    r"\bcontinu\w* (the )?train\w*|\bfailover\b",
    r"\bcontinu\w*\b[^.]{0,30}\bafter (an? )?(interruption|failure|restart|crash|preemption)s?\b",
    r"\bpreviously (dumped|saved|generated|cached|computed|stored)\b",
    # what is resumed ("restore", said of code and behaviour as often as of state, is not a cue)
    r"\bresum(e|ed|es|ing)\b",
    r"\b(after|before) (each |every |the )?(validation|abort|sleep|wake|reset|restart|step)\b",
    r"\bsave\w*\b[^.]{0,40}\blatest",
    r"\bacross (steps|calls|iterations|epochs|restarts)\b|\brepeated(ly)?\b",
    r"\bpersistent across\b",
    r"\b(on)?load\w*\s*/\s*offload\w*\b",
    r"\b(training|train)\s*(<->|↔|to|and)\s*(inference|rollout)\s+(transition|switch\w*)\b",
    r"\b(avoid\w*|stop\w*|skip\w*|keep\w*|disabl\w*)\s+caching\b",
    # what is (not) cleared or freed when a request's life turns (preempted, aborted, reset)
    r"\b(cleared|flushed|freed|released)\b[^.]{0,40}\b(when|after|before|upon|on) (\w+ ){0,3}"
    r"(preempt\w*|abort\w*|reset\w*|restart\w*|finish\w*)",
    # results kept from an earlier run and reused by the next
    r"\b(subsequent|later|next) runs?\b|\breus\w* (the )?previous(ly)?\b",
    r"\bkv[- ]?cache (allocation|allocator|blocks?|manager|management)\b",
    r"\b(cached|freed|free|evicted) blocks?\b|\bblock pool\b|\bback to the pool\b",
    r"\boffload\w*\b[^.]{0,40}\b(load(s|ed|ing|able)?|onload\w*|reload\w*|back)\b",
    # a result kept for later calls
    r"\breus\w*\b[^.]{0,30}\bcached\b|\bcach(e|es|ed|ing) (the |its |their )?results?\b",
    # what a cache or a step's state keeps that it should have let go (not memory leaked)
    r"\b(cache|state)s? leak\w*",
    # a cache of computed results kept for later calls or runs (processed inputs, encoder
    # outputs, compiled artifacts), and what keys it
    r"\b(mm|multi[- ]?modal|encoder|processor|processing|compile|compilation)\s+cach\w*",
    r"\bcache (hash\w*|keys?)\b",
    # a state kept as it was, or brought in line ("preserve the SSM state", "should not
    # modify the matcher state", "without synchronizing the cached state")
    r"\b(preserv|modif|mutat|synchroni[sz])\w*\b[^.]{0,40}\bstates?\b",
    r"\bstates?\b[^.]{0,20}\b(is|are|stays?|remains?) (preserv|unchang|intact)\w*",
)
# Operations that move state (a checkpoint saved or loaded, weights synchronised): the state
# they carry is promised, unless the sentence promises only their speed.
_STATE_OPERATIONS = (
    _CHECKPOINT + r"[^.]{0,40}\b(sav\w*|load\w*|resum\w*|restor\w*|format\w*|convert\w*|async\w*)",
    # checkpointing a model or an optimizer state (not activation checkpointing: recompute)
    _NOT_RECOMPUTE + r"\bcheckpointing\b",
    r"\b(sav\w*|load\w*|resum\w*|convert\w*)\b[^.]{0,30}" + _CHECKPOINT,
    r"\b(weights?|param\w*)[- ](sync\w*|synchroni[sz]\w*|updates?|updating|transfer"
    r"|resharding)\b",
    r"\bsynchroni[sz]\w*\b[^.]{0,30}\b(weights?|param\w*)\b",
    # checkpoints supported, managed or handled: what a run keeps for the next
    _CHECKPOINT + r"[^.]{0,20}\b(support\w*|manag\w*|handl\w*|engine)\b",
    r"\b(support\w*|add\w*|enabl\w*)\b[^.]{0,30}" + _CHECKPOINT,
)
STATE_BEHAVIOUR = rx(*_STATE_BEHAVIOURS)
# Work handed to other threads ("offload the parsing to a worker thread pool"): time
# saved, not memory offloaded.
_TO_THREADS = (
    r"[^.]{0,60}\bto (a |the |its |their )?(\w+[- ']+){0,3}"
    r"(threads?|thread pool|pool|executor|background)\b"
)
# The memory a kernel reads and writes through (global memory, its bandwidth and accesses):
# a claim about it is one of speed, not of memory held, unless a footprint is named too.
MEMORY_HIERARCHY = rx(
    r"\b(global|shared|l2|on-chip) memory\b",
    r"\bmemory (instructions?|access\w*|bandwidth|transactions?|bound|throughput|coalesc\w*)\b",
)
MEMORY_FOOTPRINT = rx(
    r"\b(footprint|usage|oom|out[- ]of[- ]memory|peak|offload\w*|capacity|consumption|leak\w*"
    r"|savings?|saves?)\b"
)
# What a sentence claims of the numbers themselves; without it, a sentence that promises speed
# or memory and names a number format ("faster FP4 quantization kernels") promises only that.
NUMERIC_CLAIM = rx(
    r"\b(accura\w*|precis\w*|correct\w*|exact\w*|match\w*|stab\w*|nans?|inf|determin\w*|numeric\w*"
    r"|invarian\w*|errors?|overflow\w*|underflow\w*|bitwise|lossless|parity|consisten\w*"
    r"|wrong|incorrect\w*|loss\w*|drift\w*|diverg\w*)\b"
)

CUES: dict[PromiseCategory, re.Pattern[str]] = {
    PromiseCategory.memory: rx(
        r"\bmemory[- ](efficient|optimi[sz]ed|saving)",
        r"\b(peak|activation)\s+memory\b",
        r"\bmemory (footprint|usage|consumption|issue|leak|pressure|size|budget|fragmentation)",
        r"\b("
        + _REDUCE
        + r"|sav|lower|decreas|optimi[sz]|free(s|d)?|secur|releas|minimi[sz])\w*"
        + _NEAR
        + r"(memory|footprint|allocations?|scratch space|workspace|buffer size)\b",
        r"(?<!symmetric )\b(memory|footprint)\b[^.]{0,30}\b("
        + _REDUCE
        + r"|sav|lower|decreas|constant|bound)\w*",
        # memory spent that need not be: a fix of the excess, or not holding it all at once
        r"\b(more|extra|excess\w*|unnecessary|redundant) (\w+ )?memory\b|\bin memory at once\b",
        r"\bmemory[- ](retention|regression|growth|bloat)\b",
        # memory held under a ceiling ("cap the intermediate memory"; not a memory-bound kernel)
        r"\b(cap(s|ped|ping)?|limit(ed|ing)|bound(ed|ing))\b[^.]{0,30}\b(memory|vram)\b"
        r"(?![- ]bound)",
        r"\b(avoid|eliminat|remov|cut)\w*\b[^.]{0,30}\bmemory (overhead|cost|waste)\b",
        r"\bleak\w*\b[^.]{0,30}\bmemory\b",
        r"\b(prevent\w*|avoid\w*|without|no longer)\b[^.]{0,20}\bhold\w*\b[^.]{0,40}\bin memory\b",
        r"\b(peak|activation|extra|more|excess\w*)\s+(\w+\s+)?vram\b",
        r"\bvram (usage|footprint|consumption)\b",
        # memory given back, its owner named first ("release transient allocator memory")
        r"\b(releas|free|reclaim)\w*\b[^.]{0,60}\bmemory\b",
        r"\b(free|releas|reclaim)\w*\b[^.]{0,30}\b(vram|activations?|workspaces?|buffers?"
        r"|storage)\b",
        r"\b(storage|buffers?|workspaces?|backups?)\b[^.]{0,20}\b(is|are|get|gets)"
        r" (now )?(released|freed|reclaimed)\b(?! (under|as)\b)",  # not software released
        # blocks left allocated to no one; an allocation not made at all
        r"\bstrand\w*",
        r"\b(without|no|avoid\w*|not|never)\b[^.]{0,30}\b(additional|extra|separate|its own|new"
        r"|persistent)\b[^.]{0,30}\b(allocat\w*|workspaces?)",
        r"\b(not|never|without|no longer)\b[^.]{0,20}\ballocat\w*\b[^.]{0,20}\b((its|their) own"
        r"|separate|extra|additional|new)\b",
        # a large intermediate never built ("without materializing the full logits")
        r"\b(avoid\w*|without|no longer|never|not|skip\w*)\b[^.]{0,20}\b(materiali[sz]\w*"
        r"|constructing)\b",
        r"\bover[- ]?(provision|allocat|reserv|commit)\w*\b",
        r"\bmeta[- ]device\b",
        r"\b(OOM|OOMs|out[- ]of[- ]memory)\b",
        # weights, activations or optimizer state moved off the device; a KV-cache tier (blocks
        # offloaded through a connector) is a cache's storage, not memory the model spends
        r"(?<!kv[- ]cache )(?<!kv )(?<!kv-)\boffload(s|ed|ing)?\b(?!" + _TO_THREADS + r")"
        r"(?![\s-]+(\w+[\s-]+){0,2}(kv|connectors?|blocks?)\b)",
        r"\b(kv[- ]?cache|cache) (memory|capacity)\b",
        # a model that fits on fewer devices
        r"\b(reduc\w*|lower\w*|fewer|less)\b[^.]{0,20}\b(minimum )?(number of )?(gpus|devices)\b",
        r"\bfit (more|larger|bigger|longer)\b",  # a batch or a model that fits now
        # less kept: only the data's identifiers stored, not the data; less state to hold
        r"\b(stor(e|es|ed|ing)|keep(s|ing)?|cach(e|es|ed|ing))\s+only\s+(the\s+|their\s+|its\s+)?"
        r"(keys|hash(es)?|ids|indices|metadata|references|handles|pointers)\b",
        r"\b(" + _REDUCE + r"|lower|less)\w*\b[^.]{0,20}\b(amount|size) of (state|data)\b",
    ),
    PromiseCategory.time: rx(
        r"\bspeed[- ]?ups?\b|\b(speeds?|sped|speeded) up\b|\bfaster\b|\bthroughput\b|\blatency\b",
        r"\baccelerat(e|es|ed|ing|ion|ions)\b",  # not "accelerator", the device
        # performance improved, even of a batch size named in symbols ("improved bs<32 perf...")
        r"\b(improv\w*|better|boost\w*|optimi[sz]\w*|quick(er)?)\s+([\w<>=.+-]+\s+){0,3}"
        r"performance\b",
        r"\bperf(ormance)? (improvement|gain|optimi[sz]ation|now scales|tuning)",
        # the same said the other way round: "its performance is often higher than ..."
        r"\bperformance (is|was|are|stays|remains) (\w+ ){0,2}(better|higher|comparable)\b",
        r"\bscal(es|ing) (much |far )?better\b",
        r"^perf\b|^optimi[sz]e\b(?![^.]*\bmemory\b)",
        r"\boverlap(s|ped|ping)?\b",
        r"\b("
        + _REDUCE
        + r"|sav|avoid|eliminat|remov|hid|lower)\w*"
        + _NEAR_NOT_MEMORY_FOR
        + r"(computation|compute|calculation|(?<!memory )overhead|cpu usage|sync\w*|stalls?"
        r"|bubbles?|launch\w*)s?\b",
        r"\bcpu usage\b[^.]{0,60}\breduc",
        r"\b(fix\w*|prevent\w*)\b[^.]{0,30}\bstalls?\b",
        r"\b(remov|avoid|eliminat|no)\w*\b[^.]{0,30}\bbusy[- ]?(loop|wait\w*|poll\w*|spin\w*)",
        r"\b(most|more) performant\b",
        r"\b(overhead|over head|latency)\b[^.]{0,30}\bdown to\b",
        r"\b(slow\w* down|hurt\w*)\b[^.]{0,20}\b(ttft|tpot|itl|latency)\b",
        r"\bminimi[sz]\w*\b[^.]{0,40}\b(overhead|latency|launch\w*|cpu time)\b",
        r"\b(reduc|cut|sav|shav)\w*\b[^.]{0,40}\bby (around |about |~)?[\d.]+ ?"
        r"(s|ms|seconds?|minutes?)\b",
        r"\bskip\w*\b[^.]{0,20}\b(extra|redundant|unnecessary)\b",
        r"(?<!^)\b(concurrently|at the same time|in parallel with)\b|\bruns? ahead\b"
        r"|\brunning ahead\b",
        # the serving latencies, cut
        r"\b(ttft|tpot|itl|time to first token|time per output token|inter-token latency)\b"
        r"[^.]{0,30}\b(" + _REDUCE + r"|lower|improv|cut|drop|decreas)\w*",
        r"\b(" + _REDUCE + r"|lower|improv|cut|decreas)\w*\b[^.]{0,30}"
        r"\b(ttft|tpot|itl|time to first token|time per output token)\b",
        # work spread over workers, collectives on faster paths
        r"(?<!tensor )(?<!data )(?<!pipeline )(?<!expert )(?<!context )(?<!sequence )"
        r"\bparallel (\w+[- ]){0,3}(load|init)\w*",
        r"\bnvls\b|\bnvlink sharp\b",
        r"\b(improv\w*|increas\w*|boost\w*|better|higher)\b[^.]{0,20}\bspeed\b",
        r"\btun(e|es|ed|ing)\b[^.]{0,30}\b(gemm|kernels?|configs?|moe|block sizes?)\b",
        r"\b(gemm|kernel)s? tuning\b|\bpinned memory\b|\bnon[- ]?blocking\b",
        # a new fused kernel ("fused a + b kernel", "fuse x and y into one kernel", "add a fused
        # x kernel", "fuse x with y")
        r"^(add\w*|implement\w*|introduc\w*)?\s*(an? )?(new )?fused [\w`-]+ (kernel|op)\b",
        r"^fus(e|es|ing)\b[^.]{0,60}\b(with|and|\+)\b",
        # ... or into the op after it (not several calls into one: fewer calls, traffic)
        r"^fus(e|es|ing)\b[^.]{0,60}\binto\b(?! (a |one )?(single|unified|one)\b)",
        r"^fused\b[^.]{0,60}(\+|\band\b)",  # a title naming the fusion done ("Fused a + b")
        r"\b(replac|remov|avoid|eliminat)\w*\b[^.]{0,20}\bblocking\b",
        r"\bfus(e|es|ed|ing)\b[^.]{0,20}\+[^.]{0,60}\bkernel\b",
        r"\bfus(e|es|ed|ing)\b[^.]{0,60}\binto (a |one |a single |a unified )?(\w+ )?kernel\b",
        # time spent, cut ("improvements on capture time", "reduces startup time")
        r"\b(" + _REDUCE + r"|improv|lower|shorten|cut|sav|optimi[sz]|decreas)\w*\b[^.]{0,40}"
        r"(?<!same )(?<!real-)(?<!real )(?<!each )(?<!every )(?<!first )(?<!ci )(?<!test )"
        r"\b(time|runtime|duration)s?\b",
        r"\b(runtime|duration|latency|wall[- ]?clock)\b[^.]{0,30}\b(was |is |are )?("
        + _REDUCE
        + r"|cut|drop|decreas|shorten|halv)\w*",
        r"\bparalleli[sz](e|es|ed|ing)\b",
        # a time given before and after ("warm-up time from 30s to 12s", "goes from ~90ms
        # down to ~15ms")
        r"\b(time|latency|duration)s? (\w+ )?from \d[\d.]* ?(s|ms|us|sec\w*|min\w*|hours?)\b to \d",
        r"\bfrom ~?\d[\d.]* ?(s|ms|us|sec\w*|min\w*)\b (\w+ )?"
        r"to ~?\d[\d.]* ?(s|ms|us|sec\w*|min\w*)\b",
        r"\boffload\w*\b" + _TO_THREADS,  # work handed to other threads
        # efficiency gained, unless it is memory's ("improves training efficiency"); a loop
        # that no longer waits on the device
        r"\b(improv\w*|more|increas\w*|better|higher|boost\w*)\b( \w+){0,3} "
        r"(?<!memory )(?<!memory-)efficien(t|cy)\b",
        r"\b(sync|synchroni[sz]ation)[- ]free\b",
        # performs better; a rate the serving is measured by, raised
        r"\bperform(s|ed|ing)? (\w+ )?better\b",
        r"\b" + _SERVING_RATE + r"\b[^.]{0,40}\b" + _RAISED,
        r"\b" + _RAISED + r"\b[^.]{0,30}\b" + _SERVING_RATE + r"\b",
        # a performance problem fixed or limited; a cost spread thin; kernels kept busy
        r"\b(fix|address|resolv|limit|solv|mitigat)\w*\b[^.]{0,40}\bperf(ormance)? (issues?|drops?"
        r"|degradation|regressions?|limitations?|impact|problems?|gaps?)\b",
        r"\bamortiz\w*|\blaunch[- ]bound\b|\b(higher|better|increas\w*|improv\w*)\b[^.]{0,20}"
        r"\boccupancy\b",
        # the time a process takes to come up
        r"\b(compile|compilation|startup|start[- ]?up|warm[- ]start|cold[- ]start) times?\b",
        # work no longer done: a kernel or a partition skipped, a result no longer built twice
        r"\bskip\w*\b[^.]{0,30}\b(kernels?|kernel launch\w*|partition)\b",
        r"\bunnecessarily re-?(comput|creat|build|calculat)\w*|\b(re-?computing|re-?creating)\b"
        r"[^.]{0,30}\b(twice|again|every|each)\b",
        r"\bthe same (speed|throughput)\b",  # a special case that no longer pays for the general
        # a loop or a scheduler no longer held up by work done inline; a result reused, not
        # computed again; a gain given as a share (of time: not of accuracy or memory)
        r"\b(not|never|no longer|without|avoid\w*|fix\w*|prevent\w*|stop\w*)\b[^.]{0,30}\bblock\w*"
        r"\b[^.]{0,20}\b(event loop|scheduler|main thread|engine loop|other requests)\b"
        r"|\bevent[- ]loop block\w*",
        r"\binstead of re-?(call|comput|creat|build|calculat)\w*",
        # work made cheaper: expensive work gated or limited, a result computed only once, a
        # pipeline without bubbles
        _EXPENSIVE_CUT,
        r"\b(comput|calculat|hash|build|initiali[sz]|creat|run)\w*\b[^.]{0,40}\bonly once\b",
        r"\bzero[- ]bubble\b",
        # a large performance drop named as the problem: the fix promises it gone
        r"\b(significant|severe|large|major|big)\b[^.]{0,20}\b(perf|performance|throughput|latency)"
        r" (drops?|degradations?|regressions?)\b",
        r"\b(improv\w*|gives?|gains?|benefits?)\b(?![^.]{0,20}" + _NOT_TIME + r")[^.]{0,20}"
        r"\b\d+(\.\d+)?(-\d+)?\s?%(?![^.]{0,30}" + _NOT_TIME + r")",
    ),
    PromiseCategory.traffic: rx(
        r"\b(data )?(transmission|traffic|bandwidth)\b",
        r"\b("
        + _REDUCE
        + r"|remov|avoid|skip|fewer|less|eliminat|only|without)\w*"
        + _NEAR
        + r"(communication volume|transfers?|copy|copying|copies|data collect|send|bytes"
        r"|gather\w*|d2h|h2d|round[- ]trips?)\b",
        r"\b(number|count) of (calls|bytes|collectives|messages|transfers)\b",
        r"\b(number|count) of (\w+ )?" + _COLLECTIVE,
        # one collective replaced by another ("replace the all-reduce with a reduce-scatter",
        # "all-gather + all-reduce -> all-gather")
        r"\breplac\w*\b[^.]{0,30}"
        + _COLLECTIVE
        + r"[^.]{0,20}\b(with|by)\b[^.]{0,20}"
        + _COLLECTIVE,
        _COLLECTIVE + r"[^.]{0,40}(->|→)[^.]{0,20}" + _COLLECTIVE,
        # ... or used in its place ("broadcast instead of all-gather")
        _COLLECTIVE
        + r"s?\b[^.]{0,30}\b(instead of|rather than|in place of)\b[^.]{0,20}"
        + _COLLECTIVE,
        r"\b(unnecessary|redundant|avoid\w*|fewer|less|no|skip\w*|eliminat\w*|remov\w*|reduc\w*)"
        r" (\w+[- ]){0,2}(mem)?cop(y|ies)\b",
        r"\b\d+\s+" + _COLLECTIVE + r"s?\b",
        r"\b(fewer|less|no|avoid\w*|skip\w*|remov\w*|one|single)\s+(\w+\s+){0,2}" + _COLLECTIVE,
        r"\ball[-_ ]?reduce\b[^.]{0,40}\bonly\b|\bonly\b[^.]{0,30}\ball[-_ ]?reduce",
        r"\bonly (\w+ ){0,3}" + _COLLECTIVE,
        r"\bcop(y|ies|ying) only\b",
        r"\b(reduc|less|fewer|smaller)\w*\b[^.]{0,20}\bdata (transferr\w*|sent|moved|copied)\b",
        # work sent in one go ("packed into one collective", "in one driver invocation")
        r"\b(a single|one) (\w+ ){0,2}(collective|payload|driver call|driver invocation|transfer"
        r"|message)\b",
        r"\b(instead of|rather than|without) (re-?send\w*|re-?transmit\w*|broadcast\w*)",
        r"\bzero[- ]cop(y|ies)\b|\bipc\b|\bno (extra |additional |collective )?communication"
        r"( overhead| (is )?(required|needed))?\b",
        r"\bcommunication (overhead|cost|volume)\b",
        # several collectives fused into one
        r"\bfus(e|es|ed|ing)\b[^.]{0,30}"
        + _COLLECTIVE
        + r"[^.]{0,40}\binto (a |one|a single|a unified)",
        r"\bcommunicat\w*\b[^.]{0,30}\b(" + _REDUCE + r"|fewer|less|avoid|eliminat|minimi[sz])\w*",
        # what crosses a process border: not serialised again, smaller messages
        r"\b((avoid|skip|remov|"
        + _REDUCE
        + r"|eliminat)\w*|fewer|less|no|without)"
        + _NEAR
        + r"(re-?serializ\w*|serializ\w*|pickl\w*|messages?|payloads?)\b",
        r"\b(compact|compress\w*|smaller)\b[^.]{0,20}\b(serializ\w*|messages?|payloads?)\b",
        # data moved through memory or storage, copies not made
        r"\bdata movement\b|\b(hbm|memory) round[- ]?trips?\b|\bstorage i/?o\b",
        r"\b(won'?t|not|no longer|don'?t|never|instead of)\b[^.]{0,20}\bcop(y|ies|ying)\b",
        r"\b(redundant|unnecessary|extra)\b[^.]{0,20}\.?clone",
        # the same data read again from device memory ("redundant HBM reloads")
        r"\b(redundant|repeated|unnecessary|extra)\b[^.]{0,20}\b(hbm|global[- ]memory|gmem)"
        r" (re-?loads?|re-?reads?|loads|reads|accesses)\b",
        # a device-host synchronisation cut: each one reads a value back to the host
        r"\b((" + _REDUCE + r"|avoid|skip|remov|eliminat)\w*|fewer|less|no|zero|without)\b"
        r"[^.]{0,30}" + _HOST_DEVICE + r"\W{1,3}" + _HOST_DEVICE + r"\s+(sync\w*|transfers?)\b",
        r"\b(zero|no|fewer|less|avoid\w*|eliminat\w*|remov\w*)\b[^.]{0,20}\bsynchroni[sz]ation"
        r" between (the )?" + _HOST_DEVICE + r" and (the )?" + _HOST_DEVICE + r"\b",
        # a driver copy call made less often ("reduce cudaMemcpyAsync")
        r"\b((" + _REDUCE + r"|avoid|skip|remov|eliminat)\w*|cut|fewer|less|no)\b[^.]{0,20}memcpy",
        # data no longer sent, a collective run only when needed ("gate all_gather on ...")
        r"\bno longer\b[^.]{0,20}\b(send|transfer|transmit|broadcast|all[-_ ]?gather)\w*",
        r"\bgat(e|es|ed|ing)\s+(\w+\s+)?" + _COLLECTIVE,
        r"\b(without|avoid\w*|no)\s+re-?transmi\w*",
        # a reduction held back to be done once; data made smaller before it is sent
        r"\b(defer\w*|delay\w*|coalesc\w*)\b[^.]{0,30}\b(grad\w* )?"
        r"(reductions?|communication)\b",
        r"\bquant\w*\b[^.]{0,40}\bbefore\b[^.]{0,20}\b(dispatch\w*|send\w*|communicat\w*|"
        + _COLLECTIVE
        + r")",
    ),
    PromiseCategory.state: rx(*_STATE_BEHAVIOURS, *_STATE_OPERATIONS),
    PromiseCategory.mode: rx(
        r"\bcuda[-_ ]?graph(s|ed)?\b|(?<![a-z])cudagraph\w*|\b(piecewise|full)[- ]graphs?\b",
        r"\bCGs?\b",  # CUDA graphs by their short name ("training CGs", "CG capture")
        r"\b(compilation|compiler) pass(es)?\b|\brecompil\w*|\b(aot|standalone)[_ ]compil\w*",
        r"\btorch[._ ]compile\b|\bcompile mode\b|\bgraph (capture|replay)\b|\binductor\b",
        r"\benforce[_ ]eager\b|\beager (mode|execution)\b",
        r"\b(cuda[- ]?)?graph(able|[- ]safe|[- ]capturable|[- ]compatible)\b|\bcapturable\b",
        r"\bpiece[- ]?wise (compil\w*|cuda[- ]?graphs?|graphs?)\b",
    ),
    PromiseCategory.numeric: rx(
        r"\bnumeric(al|ally|s)?\b|\bprecision\b|\bNaNs?\b|\binf\b|\boverflow\w*|\bunderflow\w*",
        r"\bstabl(e|ize|ilize|ility)\b|\binstabilit\w*",
        r"\bdeterminis\w*|\bbatch[- ]invarian\w*|\blossless\b|\bbitwise\b|\bclamp\w*",
        # values clipped to a bound (logits, gradients, norms, ratios)
        r"\b(logits?|grad(ient)?s?|norms?|qk|ratios?) clip\w*"
        r"|\bclip\w* (the )?(logits?|grad(ient)?s?|norms?|ratios?)\b",
        r"\bgrad(ient)?[- _]?norm\b|\b(under|over|double)[- ]?count\w*",
        r"\bscal(e|es|ed|ing)\b[^.]{0,30}\b(once|twice|by|loss\w*)\b",
        r"\bnormali[sz]\w*|\bdivisor\b|\bdenominator\b",
        r"\b(mean|average|sum)\b[^.]{0,40}\b(loss|metric|gradient|micro-?batch)\w*",
        r"\b(loss|gradient|metric)\w*\b[^.]{0,40}"
        r"\b(mean|average|aggregat\w*|scal\w*|normali\w*|calculation)",
        r"\bcorrectly all-?reduced\b|\breduce\b[^.]{0,20}\bloss\b[^.]{0,60}\bgroup\b",
        r"\baligns? with\b|\bmatch(es|ing)? (the )?(reference|baseline|bf16|fp32|hf|huggingface)\b",
        r"\b(fp32|bf16|fp16|fp8)\b[^.]{0,40}\b(reconstruct|accumulat|master)\w*",
        r"\baccumulat\w*\b[^.]{0,30}\b(in|with) (fp32|bf16|fp16|float32|higher precision)\b",
        r"\bmixed[- ]precisions?\b",
        # which tokens count in the loss
        r"\bloss(es)?\b[^.]{0,20}\b(mask\w*|padding)\b|\b(mask\w*|padding)\b[^.]{0,20}\bloss\b",
        r"\b(fix|correct|wrong|incorrect)\w*\b[^.]{0,30}\b(logprobs?|logits|accuracy|results?|outputs?"
        r"|values?|norms?)\b",
        r"\baccuracy (drop|issue|regression|degradation)\b|\brounding\b|\bmore accurate(ly)?\b",
        r"\b(generated )?outputs? (are |remain |stay )?(unchanged|identical|bit-?exact)\b",
        r"\bdouble[- ]?(mul\w*|multipl\w*|appl\w*|scal\w*)\b|\b(applied|multiplied|scaled) twice\b",
        r"\b(byte|bit)[- ](identical|exact)\b",
        r"\baccuracy (is )?(restor\w*|recover\w*)\b",
        r"\b(fix|correct|wrong|incorrect)\w*\b[^.]{0,30}\bdtypes?\b",
        # low-precision formats a run trains or serves in, and quantisation done right
        r"\b(fp8|fp16|fp4|mxfp8|nvfp4|int8|int4)\b[^.]{0,30}"
        r"\b(training|rollout|inference|quantiz\w*|fix\w*)\b",
        r"\bblock[- ]?wise (fp8|quantiz\w*)",
        # gradients that flow, or are clipped, where they should
        r"\bgrad(ient)?s?\b[^.]{0,30}\b(flow\w*|incorrect\w*|wrong\w*)\b",
        r"\b(clip\w*|detach\w*)\b[^.]{0,20}\bgrad(ient)?s?\b",
        # padding kept out of the numbers; a value divided by the size of a parallel group
        r"\bzero(es|s|ed|ing)?[- ]out\b[^.]{0,30}\b(padding|pad|padded)\b"
        r"|\b(padding|pad) tokens?\b[^.]{0,40}\b(loss|outputs?|activations?|rewards?)\b",
        r"\b(divid|multipl)\w*\b[^.]{0,40}\bby (the )?[\w-]*\s*(parallel )?(size|world size|number"
        r"|count)\b",
    ),
}

# Faster convergence: fewer steps or samples to reach a quality, not less time per step
# ("accelerate training convergence", "converges faster"); a time cue said only there is
# no time promise.
CONVERGENCE = rx(
    r"\b(faster|quicker|accelerat\w*|speed(s|ing)? up|sped up|improv\w*)"
    r"(\s+(?!and\b|or\b)[\w-]+){0,2}\s+converg\w*",
    r"\bconverg\w*\s+(\w+\s+)?(faster|quicker|more quickly|sooner)\b",
)

# A sentence about measuring a resource promises nothing about the resource itself.
MEASURING = rx(
    r"\b(log(s|ging|ged)?|logger|profil\w*|visuali[sz]\w*|monitor\w*|metrics?|trac(e|ing))\b",
    r"\bsnapshots? (dump|visuali)\w*",
    r"\b(add|adds|added|report\w*|comput\w*|calculat\w*|estimat\w*)\b[^.]{0,15}\bmfu\b"
    r"|\bflops? (calculation|estimat\w*|count\w*|accounting)\b"
    r"|\bmfu (comput|calculat|estimat)\w*",
)
# A failure of a resource fixed, even one met while measuring ("fix the OOM during memory
# profiling"): a promise, where measuring alone is not.
FAILURE_FIXED = rx(
    r"\b(fix\w*|avoid\w*|prevent\w*|resolv\w*)\b(?:[^.]|\.(?=\d)){0,40}"
    r"\b(oom|ooms|out[- ]of[- ]memory|leak\w*)\b"
)
# Time cut for what measures (expensive statistics gated behind a debug flag): the measuring costs
# the time, and the sentence promises less of it.
TIME_CUT_FOR_MEASURING = rx(_EXPENSIVE_CUT)
# Communication cut for what measures ("reduce the number of collectives this logging
# needs"): the logging costs the traffic, and the sentence promises less of it.
TRAFFIC_CUT_FOR_MEASURING = rx(
    r"\b((" + _REDUCE + r"|avoid|skip|remov|eliminat)\w*|cut|fewer|less|no)\b[^.]{0,25}"
    r"\b(collectives|communication|" + _COLLECTIVE + r"s?|syncs|synchroni[sz]ations)\b"
)
# What the change works with only ("is only supported with the new loader").
_ONLY_COMPATIBLE = r"\b(is |are )?only (compatible|supported) (with|on|for|in|under|by)\b"
LIMITATION = re.compile(
    r"\b(might|may|could) not\b|\bnot (be )?(compatible|supported|applicable)\b"
    r"|\bonly works (with|on|for|in|under)\b|\bneeds? to check\b"
    r"|\bnot (\w+ )?(supported|enabled|implemented) yet\b"
    r"|\bnot yet (supported|enabled|implemented)\b|" + _ONLY_COMPATIBLE,
    re.I,
)
# A cost the change admits ("this may use more GPU memory", "at the cost of extra latency"):
# the resource it names after the phrase is spent, not promised.
COST = rx(
    r"\b(may|might|could|can|will|would|does) (\w+ )?(consume|use|take|require|need|increase|add"
    r"|cost)s? (a bit |slightly |some |a little )?(more|extra|additional|higher)\b",
    r"\bat the (cost|expense) of\b",
    r"\b(comes|come) with (a |an |some )?(small |slight )?(cost|overhead)\b",
)
# Speed the change admits it falls short of ("latency is slightly higher with async TP", "we
# have not optimized it yet"): a limitation, not a time promise, unless the sentence fixes it.
SLOWER_ADMITTED = rx(
    r"\b(latency|overhead) (is |was |are |gets )?(slightly |a bit |somewhat )?(higher|worse)\b",
    r"\b(throughput|performance|speed) (is |was |are |gets )?(slightly |a bit |somewhat )?"
    r"(lower|worse|slower)\b",
    r"\bstill (has|have|shows?) (some )?performance (issues?|problems?|gaps?)\b",
    r"\b(have|has)( not|n'?t)( yet)?( really)? (been )?optimi[sz]ed\b",
    r"\bnot (yet )?(been )?optimi[sz]ed\b",
)
SHORTFALL_FIXED = rx(r"\b(fix\w*|resolv\w*|solv\w*)\b")
# What the change works with only: what it names after the phrase is its scope, not a promise
# (unlike "may not fit in memory", which tells the problem the change fixes).
SCOPE_LIMIT = rx(_ONLY_COMPATIBLE, r"\b(is |are )?only works? (with|on|for|in|under|by)\b")
# A mode named in a body sentence is a promise only when the sentence says it works under it.
MODE_CLAIM = rx(
    r"\b(support\w*|compatib\w*|works?|working|enabl\w*|fix\w*|under|scope|allow\w*|break\w*"
    r"|fail\w*|correct\w*|add\w*)\b"
)
# Sentences about the PR's tests, docs, examples or housekeeping: not promises.
NOT_A_PROMISE = rx(
    r"^(we |this pr )?(add|adds|added|adding|update[sd]?|updating|fix(es|ed)?|use[sd]?|run|ran"
    r"|running|write|refresh\w*|separat\w*|re-?enabl\w*|disabl\w*|skip\w*|regenerat\w*"
    r"|wrote|extend\w*|improv\w*|polish\w*|include[sd]?|document\w*)\b[^.]{0,50}"
    r"\b(tests?|unit[- ]?tests?|UTs?|test (suites?|cases?|harness)|golden values?|docs?"
    r"|documentation|readme|docstrings?"
    r"|comments?|typos?|(example|sample) (yaml|scripts?|files?|configs?)|mathematical formulations?"
    r"|formulas?|benchmarks? scripts?|ci)\b",
    r"^(rename|renames|renamed|renaming|polish|polishes|clean(s|ed)? up|cleanup|tidy|reorgani[sz]e"
    r"|delete[sd]?|extract and split|move[sd]? (files?|code))\b",
    r"^(remove[sd]?|drop(s|ped)?) (the |an? )?(unused|dead|old|deprecated|legacy)?\s*`?\w+`?$",
    # a name's prefix or suffix added or taken off: a rename ("Removed `foo_` prefix")
    r"^(remove[sd]?|drop(s|ped)?|strip(s|ped)?|add(s|ed)?) (the |an? )?(`[^`]+`|[\w.-]+) "
    r"(prefix|suffix)(es)?( from\b[^.]*)?\W*$",
    r"^(fully |completely )?(remove[sd]?|delete[sd]?|drop(s|ped)?) (the )?(unused|dead|old|obsolete"
    r"|deprecated|legacy)\b",
    r"^(and |also |the |all )?(existing |new |unit |e2e )?(tests?|ci)\b[^.]{0,40}\b(pass|passed"
    r"|green|run)\b",
    r"^(run|ran|running) (the )?(existing|all|relevant)\b",
    r"^(tested|verified|validated|benchmarked|evaluated) (it |this |locally )?"
    r"(with|on|using|against|by)\b",
    r"\b(show|shows|showing|demonstrat\w*) (that|how)\b[^.]*\b(tests?|example)\b",
    r"^(add|adds|added|adding)\b[^.]{0,40}\bexamples? (to|that|for) (demonstrat|show|illustrat)\w*",
    r"^(for example|e\.g\.|example:|as per title|see (the )?(above|below|issue)|if not\b)",
    # log output quoted in the description, and changes the author calls trivial
    r"^\(?(triggered internally|traceback\b|\w*warning:|\w*error:)",
    r"\btrivial (changes?|fix(es)?|edits?)\b",
    # how to turn it on: an instruction ("To use the resume option, set ...")
    r"^to (use|enable|try|run|reproduce|turn on|activate)\b[^.]{0,80}\b(set|add|pass|run|use"
    r"|specify|configure)\b",
    # a revert undoes what it names
    r"^reverts?\b",
    # merge order and dependencies between PRs
    r"^~?(should|must|needs? to|to) be merged (after|before|with|together)\b|^depends on\b"
    r"|^(blocked by|stacked on)\b",
    # a reference to an issue or earlier PR and nothing else ("Fixes #N.", "Fixes: #N",
    # "Refactor of #N", "FIX #N (*link existing issues ...*)": a template's italic hint)
    r"^(fix(es|ed)?|close[sd]?|resolve[sd]?|refactor of|follow[- ]up (to|of|on)|part of):?"
    r"(\s+(the|this|an?))?(\s+(issue|bug|pr))?\s*([\w./-]*#\d+)?\s*(\(\s*[*_][^)]*[*_]\s*\))?"
    r"\s*\W*$",
    # pointers to the benchmark results or figures shown elsewhere in the description
    r"^(see|observe|note|check|compare)\b[^.]{0,60}\b(below|above|attached)\W*$",
    r"\b(results?|numbers|figures?|benchmarks?|plots?) (are |is )?(shown |listed |attached )?"
    r"(below|above)\W*$",
)
# A benchmark's readout ("Mean latency: 3.21 seconds", "bs=64 old=2.40ms new=0.75ms"): what
# was measured, not a promise, unless it says what got better.
READOUT_PAIR = re.compile(
    r"\b[a-z][\w ()/-]{0,30}?\s*[:=\uff1a]\s*[-+]?(\d[\d,]*\.\d+|\d+\s*(ms|us|\u00b5s|s|sec"
    r"|seconds?|%|x|\u00d7|[gmk]i?b|tokens?/s|req(uest)?s?/s)(?![a-z]))",
    re.I,
)
LONG_DECIMAL = re.compile(r"\d\.\d{4,}")
NUMBER_TOKEN = re.compile(r"^[-+~\u2248]?\d[\d.,]*(%|x|\u00d7|[a-z]{1,3}(/s)?)?$", re.I)
READOUT_GAIN = rx(
    r"\b(speed[- ]?ups?|faster|slower|improv\w*|reduc\w*|lower|higher|less|fewer|better|worse"
    r"|sav(e|es|ed|ing))\b",
    r"\bfrom\b[^.]{0,40}\bto\b|\d\s*(x|\u00d7)(?!\w)|\d\s*%",
)
COMMAND_LINE = re.compile(
    r"^`?([A-Z][A-Z0-9_]+=\S+\s+)*(python3?|vllm (serve|bench)|bash|torchrun|pytest|lm_eval|sh"
    r"|pip|uv|docker|srun|export|cd)\b"
)
# Section headings whose prose reports how the PR was tested: results, not promises. A
# heading is read without its parentheses and decoration ("✅ Testing (2 files, 530 lines)").
TEST_SECTIONS = re.compile(
    r"^(test(s|ing)?( plan| results?| commands?| script)?|how (was|is) this tested\??"
    r"|validation|accuracy( tests?)?|evaluation|eval|unit tests?)$"
    r"|^(new |added |unit |e2e |integration )?(tests?|testing|test (coverage|cases|suites?))"
    r"( added| and (validation|verification))?$",
    re.I,
)
# Section headings whose prose describes the code before the change: the problem, not what
# the PR promises.
PROBLEM_SECTIONS = re.compile(
    r"^((the )?problem( statement)?|background|before( this pr)?|old behaviou?r"
    r"|current (behaviou?r|state|situation|implementation)|root cause|what was wrong)$",
    re.I,
)
# A sentence that opens an account of the code before the change: it, and the sentences that
# follow it in its section, describe the problem, until one turns to what the change does.
PROBLEM_OPENING = rx(
    r"^(currently|previously|prior to (this|the) (change|pr)|before (this|the) (change|pr)"
    r"|at the moment|right now|unfortunately)\b"
    # ... but "Currently, we support:" lists what the change does
    r"(?!,?\s+(we|this (pr|change|patch)|the pr) (now |also )?(support|add|implement|provid|handl"
    r"|allow|enabl|cover)\w*)",
    r"^however,? (there (is|are|was|were)|a |an |the |it |we |this (is|was|causes|leads))",
    r"^(after investigation,? )?the (root )?cause\b",
    r"^(the|this) (problem|issue|bug|reason) (is|was)\b",
    r"^this is because\b",
)
SOLUTION_OPENING = rx(
    r"^(this|the|our) (pr|change|patch|commit|fix)\b|^(in|with) this (pr|change|patch)\b",
    r"^(we|i) (now |instead |therefore )?(add|fix|introduc|implement|provid|chang|mov|replac"
    r"|remov|switch|mak|us|enabl|support|propos)\w*",
    r"^(to (fix|address|solve|resolve|avoid|mitigate)|instead|now|solution|fix)\b",
    r",\s*this (pr|change|patch) (is|also|now|makes|adds|supports|keeps)\b",
    # "This disables ...", "It now adds ...": the change acting, not the old code's effect
    r"^(it|this) (now |also )?(?!(leads|led|causes|caused|results|means|happens|seems|is|was|has"
    r"|does|goes|gets|becomes)\b)[a-z]+s\b",
)
# Section headings that warn or list limits: what may still go wrong, not a promise.
CAVEAT_SECTIONS = re.compile(
    r"^(warning|caveats?|limitations?|known (issues|limitations)|not (yet )?supported)$", re.I
)
# Section headings that name work left for later PRs: what this one does not promise.
LATER_SECTIONS = re.compile(
    r"^(todos?|to dos?|next steps?|roadmap|future( work| plans?| improvements?)?"
    r"|follow[- ]?ups?( work)?|what'?s next|out of scope)$",
    re.I,
)
_DECORATION = re.compile(r"\([^)]*\)|\[[^\]]*\]|[^\w\s&/-]+")


def heading_name(section: str) -> str:
    """A section heading without parentheses, brackets, emoji and punctuation."""
    return " ".join(_DECORATION.sub(" ", section).split())


# A docs title's clauses ("improve docs, fix X and optimize Y"); one without these words is code.
TITLE_CLAUSE = re.compile(r"[,;]\s*|\s+and\s+")
DOCS_WORDS = rx(
    r"\b(docs?|documentation|readme|typos?|comments?|docstrings?|examples?)\b",
    r"\b(ci|workflows?|containers?|docker\w*|github actions|pre-commit|lint\w*)\b",
)
# A clause about the PR's own tests ("and unit tests", "with e2e coverage").
TEST_WORDS = rx(r"\b(tests?|unit[- ]?tests?|e2e|test (suites?|cases?)|test coverage|ci)\b")
# Section headings that name a documentation change: its prose promises no behaviour.
DOCS_SECTIONS = re.compile(r"\b(docs?|documentation|readme)\b", re.I)
# Title tags that name the kind of change ([Perf], perf:, [torch.compile]): the title promises
# that category.
TITLE_TAGS: dict[PromiseCategory, re.Pattern[str]] = {
    PromiseCategory.time: rx(
        r"\[[^\]]*\bperf(ormance)?\s*\]", r"^\s*(\[[^\]]*\]\s*)*perf(\([^)]*\))?:"
    ),
    PromiseCategory.mode: rx(
        r"\[\s*(torch\.compile|compile|cuda[- _]?graphs?|full[- _]?graph)\s*\]"
    ),
}
# A title's own jargon for a kind of change: a short title names its feature ("Inference
# Optimized MoEs", "Add encoder prefetch") where a description would say what got faster;
# in a description's prose these words are said in passing.
TITLE_CUES: dict[PromiseCategory, re.Pattern[str]] = {
    # ... unless what is optimized is memory ("Memory-optimized attention")
    PromiseCategory.time: rx(
        r"(?<!memory )(?<!memory-)\boptimi[sz]ed\b(?![^.]*\bmemory\b)", r"\bprefetch\w*"
    ),
}
FEATURE_VERB = re.compile(
    r"^(this (pr|change|patch|commit)\s+|we (now )?|it (now )?)?"
    r"(add|adds|added|support|supports|introduc\w+|implement\w*|integrat\w+|enabl\w+"
    r"|provid\w+|fix|fixes|fixed|make|makes|allow\w*|use|uses|mov(e|es|ed)|mark\w*|refactor\w*"
    r"|unif\w+|chang\w+|updat\w+|replac\w+|remov\w+|expos\w+|log|logs|deprecat\w+|register\w*"
    r"|extend\w*|disabl\w+|emit\w*|accept\w*|return\w*|handl\w+|switch\w*|avoid\w*|skip\w*"
    r"|resolv\w+|prevent\w*|ensur\w+|upgrad\w+|appl(y|ies|ied)|publish\w*|wrap\w*|cancel\w*"
    r"|gate[sd]?|bump\w*|restor\w+|rewrit\w+|convert\w*)\b",
    re.I,
)
# A list item that names a component and what it does ("`name`: does x", "A new X that ...").
LISTED_COMPONENT = re.compile(
    r"^(`?[\w.]+`?\s*(\(\))?\s*:\s+\w|(a|an|new)\s+(new\s+|customi[sz]ed\s+|custom\s+)?`?\w)", re.I
)
# A change of the code's shape alone ("Refactor X into a mixin", "Extract the layout into a
# classmethod", "Reduce boilerplate around ...", "Unify"): no behaviour is promised unless a
# purpose follows ("... to support Y", "... so that ...") or a specific category applies.
RESTRUCTURE = rx(
    r"^(this (pr|change)\s+|we\s+)?(refactor\w*|restructur\w*|re-?organi[sz]\w*|modulari[sz]\w*"
    r"|consolidat\w*|unif(y|ies|ied)|simplif(y|ies|ied)|decoupl\w*|extract\w*|separat\w*"
    r"|mov(e|es|ed|ing))\b",
    r"^[\w ./-]{0,30}\brefactor(ing)?\s*:|\bboilerplate\b|\bmore modular\b",
)
PURPOSE = rx(
    r"\b(to|so (that|it|we)|in order to|which|that) (now )?(support|enabl|allow|avoid|fix|prevent"
    r"|reduc|speed|improv|handl|work|accept|let|make|add)\w*",
    r"\b(for|with) (better|faster|lower|less|fewer)\b|\binstead of\b",
    r"\bto (cpu|gpu|host|device)\b",
    r"\band (add|register|support|enabl|fix|expos|introduc|implement)\w*",
    r"\bfrom\b[^.]{0,40}\bto\b",
)
# Claims without a leading verb: a new option, a default, what now works.
BEHAVIOUR_CLAIM = rx(
    r"^(a |an )?new\b",
    r"^by default\b",
    r"\b(now )?works (with|on|under|for|in)\b",
    r"\bmaintains? (full )?backward[- ]compatib\w*",
    r"\b(now )?(you|users) can\b|\bcan now\b",
)
ERROR_CLAIM = re.compile(
    r"\b(raises?|throws?|triggers?) (an? |the )?(\w+ )?(error|exception)\b|\bTypeError\b"
    r"|(?<!-)\b(error|crash\w*|mismatch)\b[^.]{0,30}\b(when|if|with|regarding)\b",
    re.I,
)
NAMED_INTERFACE = re.compile(
    r"^`?[A-Za-z_][\w.]*(\([^)]*\))?`?\s+(contextmanager|decorator|function|class|method|option"
    r"|flag)\b"
    r"|^configurable (via|with|through)\b",
    re.I,
)
DOCS_ONLY_TITLE = re.compile(
    r"\[(doc|docs|ci|tests?)\]|^\s*(\w+:\s*)?(doc|docs|ci|build|tests?)(\([^)]*\))?\s*:|\breadme\b"
    # a title that opens with CI, or is a branch name of a CI change ("user/ci/auto-reminder")
    r"|^\s*ci\b(?![-_])|^\S*/ci/"
    # a conventional commit scoped to CI, docs, tests or the build ("fix(ci): ...")
    r"|^\s*\w+\((ci|docs?|tests?|build)\)!?\s*:"
    r"|\bdocumentation\b"
    r"|\btypos?\b"
    # the images and dependencies it is built with
    r"|\bdocker\s*files?\b|\b(docker|container) (images?|versions?|builds?)\b|\bimage build\b"
    r"|^\s*bump\b"
    # the project's process: who is on call, how review works
    r"|\b(on-?call|codeowners|review process|contributing guide|release notes)\b",
    re.I,
)
# A title clause about the PR's own tests or tidying ("Perf tests", "enforce pass thresholds",
# "Miscellaneous inference cleanup", "limit ruff checks"): no behaviour of the code.
HOUSEKEEPING_CLAUSE = rx(
    r"\btests?\s*$",
    r"\bpass(ing)? thresholds?\b",
    r"\bclean-?ups?\s*$",
    r"\b(ruff|mypy|flake8|isort|black) (checks?|rules?|config\w*)\b",
    # lint findings fixed, or a title that is only "X miscellaneous"
    r"\blint(ing|er|s)?\b[^.]{0,20}\b(errors?|warnings?|issues?|fix\w*)\b",
    r"\bmisc(ellaneous|elaneous)?\s*$",
)
QUANTITY = rx(
    r"(?:up to\s+)?\d+(?:\.\d+)?\s*"
    r"(?:[x\u00d7](?![a-z])|%|percent\b|[GMK]i?B\b|ms\b|seconds?\b|times\b)",
    r"\ban order of magnitude\b|\bconstant amount\b",
)
