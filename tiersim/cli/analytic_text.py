"""``tiersim analytic``'s answer as plain lines for a terminal (:func:`render`), or the note
that says why there is no trade to model (:func:`render_note`).
"""

from __future__ import annotations

from tiersim.analytic import closed_form_words, max_saving

#: Where a tier's accuracy came from (``Prepared.accuracy_source``), as ``run`` labels it.
ACCURACY_WORDS = {"labels": "measured: the trace's labels", "scenario": "the scenario's table",
                  "prior": "prior"}


def accuracy_words(label: str | None) -> str:
    """A tier's accuracy source label (:data:`ACCURACY_WORDS`) in words, with what the scenario
    says its numbers are (``"scenario (illustrative)"``: "the scenario's table, illustrative")."""
    origin, _, said = (label or "labels").partition(" (")
    words = ACCURACY_WORDS.get(origin, ACCURACY_WORDS["labels"])
    return f"{words}, {said.removesuffix(')')}" if said else words


def render_note(out: dict) -> str:
    """Why the scenario's prices leave no trade to model, after where the estimate came from:
    the words of ``tiersim run``'s summary (its ``analytic`` note)."""
    return "\n".join([*_estimate_lines(out["estimated_from"]), out["note"]])


def _estimate_lines(e: dict) -> list[str]:
    """Where an estimate came from, its units and each tier's accuracy, as lines."""
    tiers = f"; tiers and prices from {e['tiers_from']}" if e.get("tiers_from") else ""
    costs = f"; {e['costs']}" if e.get("costs") else ""  # none: nothing served, nothing priced
    lines = [f"estimated from {e['source']} ({e['n']:,} request{'' if e['n'] == 1 else 's'}, "
             f"{e['cheap']} vs {e['top']}{tiers}){costs}"]
    if e.get("assumed"):
        lines.append(f"note: no prices given, so {e['assumed']} is assumed (set --c0 and "
                     "--dc, or give --scenario)")
    sources = e.get("accuracy_source", {})
    scored = ("; scored on this workload's realised draws, as run scores a router that "
              "reads them" if e.get("basis") == "realised" else "")
    if "accuracy" not in e:  # no request to score
        return lines
    lines.append("accuracy: " + ", ".join(
        f"{name} {acc:.4f} ({accuracy_words(sources.get(name))})"
        for name, acc in e["accuracy"].items()) + scored)
    return lines


#: The flags that give the model's inputs, and what each input is when its flag is not given.
FLAG_INPUTS = {"--p": None, "--eps": None, "--delta": None, "--c0": "c0 0 by default",
               "--dc": "dc 1 by default"}


def figure_sources(out: dict, given: tuple[str, ...] = ()) -> dict[str, str]:
    """Where each figure of :func:`tiersim.analytic.summary`'s ``out`` comes from, by its key:
    its inputs (``params``: the flags ``given``, defaults, or the estimate above) and, for the
    rest, the closed form of which inputs. A scenario's cheapest uniform fleet at the floor is
    its own fleet sized by simulation, in the closed form's units."""
    every = closed_form_words("p / eps / delta, c0 / dc and the top tier's accuracy")
    sources = {"params": _inputs_source(out.get("estimated_from"), given),
               "dC_star": closed_form_words("p / eps / delta and dc"),
               "kink": every, "oracle_frontier": every, "static_frontier": every}
    f = out.get("at_floor")
    if f is not None:
        sized = ("; the uniform fleet's cost: the scenario's fleet sized by simulation, as run "
                 "prices it" if f.get("uniform_among_every_tier") else "")
        sources["at_floor"] = every + sized
    return sources


def _inputs_source(est: dict | None, given: tuple[str, ...]) -> str:
    """Where p, eps, delta, c0, dc and the top tier's accuracy come from: the flags as given
    (the rest at their defaults, the top tier's accuracy taken as 1), else the estimate above
    (its prices as given, assumed, or priced by simulation)."""
    if est is None:
        flags = [flag for flag in FLAG_INPUTS if flag in given or FLAG_INPUTS[flag] is None]
        defaults = [words for flag, words in FLAG_INPUTS.items()
                    if words is not None and flag not in given]
        return ", ".join([f"{' / '.join(flags)} as given", *defaults,
                          "top tier's accuracy taken as 1 (accuracies relative to it)"])
    prices = (f"{est['assumed']} assumed" if est.get("assumed") else
              "c0 / dc as given" if est.get("per") is None else "c0 / dc priced as above")
    return (f"p / eps / delta and the top tier's accuracy estimated from {est['source']} "
            f"(above); {prices}")


def _sourced(line: str, sources: dict, key: str) -> str:
    """``line`` with where its figures come from (``sources[key]``), after "; source: " as
    the plan's lines write it; as it is where ``out`` carries no sources (a summary written by
    :func:`tiersim.analytic.summary` alone)."""
    return f"{line}; source: {sources[key]}" if key in sources else line


def render(out: dict) -> str:
    """The summary as plain lines for a terminal; dC*'s share of dc from the shares and losses
    (it is dc's whatever dc is), in plain digits (:func:`~tiersim.results.share_text`)."""
    from tiersim.results import share_text

    m = out["params"]
    sources = out.get("sources", {})
    lines = []
    per = "per request"
    if "estimated_from" in out:
        e = out["estimated_from"]
        per = e.get("per", per)
        lines += _estimate_lines(e)
        if m["eps"] < 0:
            lines.append(_sourced(
                f"note: eps < 0: the cheap tier is right on some requests the top tier gets "
                f"wrong, so the oracle (which knows them) reaches {out['kink']['accuracy']:.4f}, "
                f"above the top tier's {m['a_top']:.4f}", sources, "kink"))
    lines += [_sourced(line, sources, key) for line, key in (
        # four significant digits, as the run's report shows them (four decimals printed a
        # loss of 3e-05 as "eps = 0.0000")
        (f"p = {m['p']:.4g}   eps = {m['eps']:.4g}   delta = {m['delta']:.4g}   "
         f"c0 = {m['c0']:.6g}   dc = {m['dc']:.6g}", "params"),
        (f"dC* = {out['dC_star']:.6g} {per} "
         f"({share_text(max_saving(m['p'], m['eps'], m['delta']))} of dc) at the "
         + ("kink" if m["eps"] >= 0 else f"top tier's accuracy {m['a_top']:.4f}"), "dC_star"),
        (f"kink: {out['kink']['top_share']:.1%} on the top tier, cost "
         f"{out['kink']['cost']:.6g}, accuracy {out['kink']['accuracy']:.4f}", "kink"),
        ("oracle frontier (cost, accuracy): " + _points(out["oracle_frontier"]),
         "oracle_frontier"),
        ("static split frontier (cost, accuracy): " + _points(out["static_frontier"]),
         "static_frontier"))]
    f = out.get("at_floor")
    if f:
        from tiersim.results import floor_pair

        lines.append(_sourced(
            f"at floor {floor_pair(f['floor'], f['floor'], percent=False)[1]}: oracle "
            f"{_num(f['oracle_cost'])}, {_uniform_words(f)}, {_static_words(f)}; saving vs "
            f"uniform {_num(f['vs_uniform'])}, vs static {_num(f['vs_static_split'])}",
            sources, "at_floor"))
    return "\n".join(lines)


def _uniform_words(f: dict) -> str:
    """The at-floor line's uniform fleet: "cheapest uniform 1" for the model's own two tiers
    (given as --p/--eps/--delta), else which tiers it was chosen among and which it is: "cheapest
    uniform of the scenario's 3 tiers (fp8) 0.187941" (as ``tiersim run``'s baseline), "cheaper
    uniform of the two compared tiers (bf16) 0.306304" where only those are priced. Before, the
    second read "cheapest uniform 0.306304" beside a run whose baseline was fp8 at 0.188."""
    if "uniform_among" not in f:
        return f"cheapest uniform {_num(f['uniform_cost'])}"
    head = (f"cheapest uniform of the scenario's {len(f['uniform_among'])} tiers"
            if f["uniform_among_every_tier"] else "cheaper uniform of the two compared tiers")
    tier = "" if f["uniform_tier"] is None else f" ({f['uniform_tier']})"
    return f"{head}{tier} {_num(f['uniform_cost'])}"


def _static_words(f: dict) -> str:
    """The at-floor line's static split: "static split 1.5" for the model's own two tiers
    (given as --p/--eps/--delta), else naming them: "static split of the two compared tiers
    (nvfp4, bf16) 0.126711". The closed form splits between its two tiers only (its oracle and
    dC* are theirs), so beside a uniform fleet chosen among every tier the bare "static split"
    read as a split of any of the scenario's tiers."""
    if "static_split_tiers" not in f:
        return f"static split {_num(f['static_split_cost'])}"
    cheap, top = f["static_split_tiers"]
    return f"static split of the two compared tiers ({cheap}, {top}) {_num(f['static_split_cost'])}"


def _points(points) -> str:
    """(cost, accuracy) pairs, compactly."""
    return ", ".join(f"({c:.4g}, {a:.4f})" for c, a in points)


def _num(x) -> str:
    """A number or 'out of reach'."""
    return "out of reach" if x is None else f"{x:.6g}"
