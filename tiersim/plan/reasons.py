"""Why a design has no size, in words: routed requests longer than their tier's context
(:func:`_too_long`, with the fix for each tier) or larger than one sequence may hold of a
replica's KV cache (:func:`_over_kv_words`), each also in a few words as a run's uniform
baseline gives them (:func:`_drops_words`, :func:`_over_kv_drops`); the GPUs per replica
tried (:func:`_per_replica`) and an exception on one line (:func:`_one_line`)."""

from __future__ import annotations

from tiersim.plan.evaluate import Design

TOO_LONG = "dropped at any size"
"""Words of a design's miss when requests are longer than a tier's context (see
:func:`_too_long`)."""


def _one_line(err: BaseException) -> str:
    """An exception as one line."""
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _per_replica(gpus: list[int]) -> str:
    """``1 GPU per replica`` / ``1, 2, 4 GPUs per replica``."""
    return f"{', '.join(map(str, gpus))} GPU{'' if list(gpus) == [1] else 's'} per replica"


def _too_long(longer: list[tuple[str, int, int]], own: set[str],
              beyond: dict[str, tuple[int, int]] | None = None, unsent: int = 0) -> str:
    """A design's requests longer than their tier's context (:meth:`Planner._longer`), with
    the fix, in words: raise ``max_model_len`` on the tiers that set their own (``own``),
    else (the model's context already) serve them on a model with a longer one, as a run's
    note says; with both kinds of tier, each is named with its own fix. ``beyond``
    (:meth:`Planner._beyond_model`): those longer than their model's maximum context, which
    no ``max_model_len`` serves, named apart (they were told to raise it). ``unsent``: the
    later agent-task steps they cut off, never sent (:func:`_unsent_words`)."""
    count, where = _longer_counted(longer)
    one = count == "1"
    them = "it" if one else "them"
    return (f"{count} {'request is' if one else 'requests are'} longer (prompt + output) than "
            f"{'its' if one else 'their'} tier's context ({where}) and "
            f"{'is' if one else 'are'} {TOO_LONG}{_unsent_words(unsent, one)}; "
            f"{_too_long_fix(longer, own, them, beyond)} "
            f"or leave {them} out of the trace{_skip_words(longer, own, beyond)}")


def _skip_words(longer: list[tuple[str, int, int]], own: set[str],
                beyond: dict[str, tuple[int, int]] | None) -> str:
    """": trace.skip_longer_than: 262144 leaves them out at load, as vLLM refuses them at its
    API whatever the fleet" where every request :func:`_too_long` counts is longer than its
    model's maximum context (a tier at its model's context, or one ``beyond`` names for all of
    its), with the longest of those contexts; "" where raising a ``max_model_len`` would serve
    some."""
    beyond = beyond or {}
    contexts = []
    for name, count, context in longer:
        if name not in own:
            contexts.append(context)
        elif beyond.get(name, (0, 0))[0] == count:
            contexts.append(beyond[name][1])
        else:
            return ""
    them = "it" if sum(n for _, n, _ in longer) == 1 else "them"
    return (f": trace.skip_longer_than: {max(contexts)} leaves {them} out at load, as vLLM "
            f"refuses {them} at its API whatever the fleet")


def _too_long_fix(longer: list[tuple[str, int, int]], own: set[str], them: str,
                  beyond: dict[str, tuple[int, int]] | None = None) -> str:
    """The fix :func:`_too_long` gives: raise ``max_model_len`` where every tier sets its own,
    serve elsewhere where none does, and with both, which tiers get which. Requests longer
    than their model's maximum context (``beyond``, on a tier that sets its own
    ``max_model_len``; a tier at its model's context is told so already) are named apart, each
    tier by name: no ``max_model_len`` serves them, so they were not to be told to raise it."""
    beyond = {name: v for name, v in (beyond or {}).items() if name in own}
    if not beyond:
        return _raise_or_serve(longer, own, them)
    rest = [name for name, n, _ in longer if n > beyond.get(name, (0, 0))[0]]
    words = [_raise_words([n for n in rest if n in own]), _fixed_words(
        [n for n in rest if n not in own])]
    past = sum(k for k, _ in beyond.values())
    exceed = " and ".join(f"{k:,} on {name} exceed{'s' if k == 1 else ''} its model's maximum "
                          f"context ({context:,} tokens)" for name, (k, context) in beyond.items())
    words.append(f"{exceed}, which no max_model_len serves: serve "
                 f"{'it' if past == 1 else 'them'} on a model with a longer context")
    return "; ".join(w for w in words if w)


def _raise_or_serve(longer: list[tuple[str, int, int]], own: set[str], them: str) -> str:
    """:func:`_too_long_fix` where every request is within its model's context."""
    raised = [name for name, _, _ in longer if name in own]
    fixed = [name for name, _, _ in longer if name not in own]
    if not fixed:
        return "raise tiers[].scheduler.max_model_len (up to the model's context)"
    if not raised:
        return (f"{'it is the model' if len(longer) == 1 else 'each is its model'}'s context: "
                f"serve {them} on a model with a longer context")
    return f"{_raise_words(raised)}; {_fixed_words(fixed)}"


def _raise_words(raised: list[str]) -> str:
    """"raise w4a16's scheduler.max_model_len (up to its model's context)"; "" for none."""
    if not raised:
        return ""
    return (f"raise {' and '.join(raised)}'s scheduler.max_model_len (up to "
            f"{'their models' if len(raised) > 1 else 'its model'}'s context)")


def _fixed_words(fixed: list[str]) -> str:
    """"bf16's is its model's context: serve its requests on a model with a longer context";
    "" for none."""
    if not fixed:
        return ""
    many = len(fixed) > 1
    return (f"{' and '.join(fixed)}'s {'are their models' if many else 'is its model'}'s "
            f"context: serve {'their' if many else 'its'} requests on a model with a longer "
            f"context")


def _drops_words(longer: list[tuple[str, int, int]], unsent: int = 0) -> str:
    """The same in a few words (a run's uniform baseline gives them): ``"drops 476 requests
    longer (prompt + output) than fp8's max_model_len 1,500 at any size"``, and the later
    agent-task steps they cut off (``unsent``, :func:`_unsent_words`): before, those were
    counted as longer ("drops 2 requests longer" where 1 was and the other, its task's next
    step, was never sent)."""
    count, where = _longer_counted(longer)
    return (f"drops {count} request{'s' if count != '1' else ''} longer (prompt + output) than "
            f"{where} at any size{_unsent_words(unsent, count == '1')}")


def _unsent_words(unsent: int, one: bool) -> str:
    """", and 1 later step of its task, never sent" (``one``: of one request too long) where
    requests too long cut ``unsent`` later steps of their agent tasks off (the engine never
    sends a step after a dropped one, as a run's note on drops says); "" for none."""
    if not unsent:
        return ""
    whose = "its task" if one else "their tasks"
    return f", and {unsent:,} later step{'s' * (unsent != 1)} of {whose}, never sent"


def _over_kv_words(larger: list[tuple[str, int, int]], design: Design) -> str:
    """Requests larger than their tier's KV cache holds for one sequence
    (:meth:`Planner._over_kv`), with the fix, in words."""
    count = sum(n for _, n, _ in larger)
    where = ", ".join(f"{room:,} tokens on {name} at {_per_replica([design.gpus(name)])}"
                      for name, _, room in larger)
    many = "requests are" if count != 1 else "request is"
    return (f"{count:,} {many} larger than one sequence may hold of a replica's KV cache "
            f"({where}) and {'are' if count != 1 else 'is'} dropped at any replica count; "
            "allow more GPUs per replica (--gpus-per-replica or limits.gpus_per_replica) or "
            "give the tier more memory (gpu_memory_utilization)")


def _over_kv_drops(larger: list[tuple[str, int, int]]) -> str:
    """The same in a few words (a run's uniform baseline gives them)."""
    count = sum(n for _, n, _ in larger)
    where = ", ".join(f"{name}'s {room:,} tokens" for name, _, room in larger)
    return (f"drops {count:,} request{'s' if count != 1 else ''} larger than one sequence may "
            f"hold of a replica's KV cache ({where}) at any replica count")


def _longer_counted(longer: list[tuple[str, int, int]]) -> tuple[str, str]:
    """How many requests are too long (``"1,234"``) and which contexts they exceed."""
    where = ", ".join(f"{name}'s max_model_len {context:,}" for name, _, context in longer)
    return f"{sum(n for _, n, _ in longer):,}", where
