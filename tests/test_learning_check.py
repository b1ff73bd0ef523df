"""selfplay/evaluation/learning.py: whether the probe figures left the first evaluation's interval,
and the one "not learning" warning, on reports computed by hand."""
from __future__ import annotations

from selfplay.evaluation import LearningCheck, learning_text
from selfplay.evaluation.learning import risen
from selfplay.messages import EvalReport, Learning


def report(step: int, policy=(0.062, 0.044, 0.087), search=(0.078, 0.058, 0.105), value=(15.8, 14.5, 17.0),
           mates: float | None = None, puzzles: int | None = None, policy_puzzles: int | None = None):
    """An evaluation with these probe figures (each: value, lower, upper); the rest as a chess run's."""
    probe = {} if policy is None else dict(
        probe_policy=policy[0], probe_policy_lower=policy[1], probe_policy_upper=policy[2],
        probe_search=search[0], probe_search_lower=search[1], probe_search_upper=search[2], probe_random=0.059,
        probe_value_error=value[0], probe_value_error_lower=value[1], probe_value_error_upper=value[2],
        probe_draw_error=15.8)
    return EvalReport(step=step, hours=0.0, positions=0, games=0, loss=None, elo=0.0, elo_lower=-50.0,
                      elo_upper=50.0, score_vs_random=0.5, mates_search=None, mates_policy=mates, seconds=1.0,
                      mate_puzzles=puzzles, policy_mate_puzzles=policy_puzzles, **probe)


def test_a_figure_rises_only_when_its_interval_clears_the_first():
    first = report(0)
    assert risen(first, report(1000, policy=(0.12, 0.094, 0.152))) == ("policy",)  # 9.4 > 8.7
    assert risen(first, report(1000, policy=(0.11, 0.086, 0.14))) == ()  # 8.6 is inside the first's interval
    assert risen(first, report(1000, search=(0.14, 0.11, 0.17))) == ("search",)
    assert risen(first, report(1000, value=(13.5, 12.5, 14.4))) == ("value",)  # an error falls: 14.4 < 14.5
    assert risen(first, report(1000, value=(14.0, 13.0, 15.0))) == ()
    assert risen(first, report(1000, value=(20.0, 18.5, 21.5))) == ()  # worse is not a rise
    # an untrained value worse than a constant that falls back to the constant's level has learnt nothing
    assert risen(report(0, value=(20.3, 19.1, 21.5)), report(344, value=(16.1, 14.8, 17.3))) == ()
    assert risen(report(0, value=(20.3, 19.1, 21.5)), report(344, value=(14.0, 13.0, 15.0))) == ("value",)


def test_the_warning_fires_once_when_due_and_nothing_rose():
    check = LearningCheck(after_steps=2000)
    assert check.observe(report(0)) is None and check.summary() is None  # the first evaluation: the start
    assert check.observe(report(1000)) is None  # not due yet
    line = check.observe(report(2000, policy=(0.07, 0.05, 0.095), value=(16.9, 15.8, 18.1)))
    assert line.startswith("not learning at step 2000") and "step 0" in line
    assert "7.0% (then 6.2%, a random mover 5.9%)" in line and "16.9 win% (then 15.8, a constant draw 15.8)" in line
    assert "docs/selfplay.md" in line
    assert check.observe(report(3000)) is None  # once
    assert check.summary() == Learning(0, 3000, (), line)
    assert learning_text(check.summary()).startswith("not learning yet: from step 0 to 3000")


def test_a_run_that_learns_is_not_warned_and_says_what_rose():
    check = LearningCheck(report(0), after_steps=2000)  # a resumed run: its first evaluation read back
    assert check.observe(report(2000, policy=(0.13, 0.10, 0.16), value=(13.0, 12.0, 14.0))) is None
    assert check.summary() == Learning(0, 2000, ("policy", "value"), None)
    assert learning_text(check.summary()) == ("learning: from step 0 to 2000 the raw policy's agreement, the "
                                              "value's error left the first interval (probe, 95%)")
    never = LearningCheck(report(0), after_steps=0)  # evaluation.learning_after_steps=0
    assert never.observe(report(5000)) is None and never.summary().rose == ()


def test_games_without_the_probe_are_never_judged():
    check = LearningCheck(report(0, policy=None), after_steps=100)
    assert check.observe(report(500, policy=None)) is None and check.summary() is None


def test_the_raw_policy_solving_more_mate_puzzles_is_a_rise_beyond_their_intervals():
    """Mate puzzles by the raw policy: Wilson intervals of the shares solved, computed by hand here
    (0 of 200: [0, 1.88%]; 10 of 200: [2.74%, 8.96%]; 4 of 200: [0.78%, 5.03%])."""
    from selfplay.evaluation.learning import mates_interval
    first = report(0, mates=0.0, puzzles=200)
    lo, hi = mates_interval(first, "mates_policy")
    assert lo == 0.0 and abs(hi - 0.01885) < 1e-5
    lo, hi = mates_interval(report(700, mates=0.05, puzzles=200), "mates_policy")
    assert abs(lo - 0.02738) < 1e-5 and abs(hi - 0.08958) < 1e-5
    assert risen(first, report(700, mates=0.05, puzzles=200)) == ("mates",)  # 2.74% > 1.88%
    assert risen(first, report(700, mates=0.02, puzzles=200)) == ()  # 4 of 200: 0.78% is inside
    assert risen(report(0, mates=0.0), report(700, mates=0.5)) == ()  # rows without a count: no interval
    check = LearningCheck(first, after_steps=500)
    line = check.observe(report(700, mates=0.01, puzzles=200))
    assert "the raw policy solves 1.0% of 200 mate puzzles (then 0.0%)" in line
    # the raw policy's own mateIn1 count, where the row has one: 10 of 1,000 is [0.54%, 1.83%] by hand,
    # 30 of 1,000 [2.11%, 4.25%]; the search's count (200) is not the policy's
    lo, hi = mates_interval(report(0, mates=0.01, puzzles=200, policy_puzzles=1000), "mates_policy")
    assert abs(lo - 0.00544) < 1e-5 and abs(hi - 0.01831) < 1e-5
    tight = report(0, mates=0.01, puzzles=200, policy_puzzles=1000)
    assert risen(tight, report(700, mates=0.03, puzzles=200, policy_puzzles=1000)) == ("mates",)
    assert risen(report(0, mates=0.01, puzzles=200), report(700, mates=0.03, puzzles=200)) == ()  # 200: too few
    assert learning_text(Learning(0, 700, ("mates",))).endswith("the raw policy's mate puzzles left the first "
                                                                "interval (probe, 95%)")


def test_the_picture_draws_mate_shares_at_the_ends_of_their_intervals(tmp_path):
    """The search solving all of its 100 puzzles, the raw policy none of its 1,000: each share sits at an
    end of its interval (a Wilson bound rounded a hair inside the rate once failed the picture, and the
    step-0 evaluation with it)."""
    import dataclasses

    from arena import GameResult, fit_ratings, probe
    from selfplay.evaluation.plot import plot_progress
    assert probe.wilson(100, 100)[1] == 1.0 and probe.wilson(0, 1000)[0] == 0.0
    reports = [dataclasses.replace(report(step, mates=rate, puzzles=100, policy_puzzles=1000), mates_search=1.0)
               for step, rate in ((0, 0.0), (300, 0.004))]
    fit = fit_ratings([GameResult("step-0", "random", 1.0), GameResult("random", "step-300", 0.5)], anchor="random")
    plot_progress(tmp_path / "progress.png", reports, fit, "ends")
    assert (tmp_path / "progress.png").stat().st_size > 0


def test_a_lone_evaluation_gets_a_readable_axis(tmp_path):
    """One evaluation (a run stopped before its second) drew its points on matplotlib's sliver around a lone
    x (minutes 0.0033-0.0036); the axis now spans [0, 1] past the points (two 1% apart count as one x), an
    axis without a point says "none yet", and points spread out keep their own axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from arena import GameResult, fit_ratings
    from selfplay.evaluation.plot import plot_progress, widen_lone_x
    fig, (lone, shifted, empty, pair) = plt.subplots(1, 4)
    lone.errorbar([0.0035], [12.0], yerr=[[5.0], [5.0]], marker="o")
    lone.axhline(0.0)
    shifted.plot([0.0, 0.01], [1.0, 2.0], "o")
    empty.plot([0.5], [float("nan")])
    pair.plot([0.0, 300.0], [1.0, 2.0])
    before = pair.get_xlim()
    for ax in (lone, shifted, empty, pair):
        widen_lone_x(ax)
    assert lone.get_xlim() == (-0.05, 1.0) and shifted.get_xlim() == (-0.05, 1.0)
    assert empty.get_xlim() == (0.0, 1.0) and [t.get_text() for t in empty.texts] == ["none yet"]
    assert pair.get_xlim() == before and not pair.texts
    plt.close(fig)
    fit = fit_ratings([GameResult("step-0", "random", 1.0)], anchor="random")
    plot_progress(tmp_path / "progress.png", [report(0, mates=0.0, puzzles=100)], fit, "one evaluation")
    assert (tmp_path / "progress.png").stat().st_size > 0
