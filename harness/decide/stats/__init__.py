"""Statistics for ttfg: summaries, regression verdicts, the sequential gate, study fits.

Why this module exists
----------------------
A cold-process TTFG sample on a small CI machine is noisy (CV 11-25 %) and the
machine's speed drifts by 30-50 % within minutes, slowly and multiplicatively, for
every process running close in time. Comparing two means by eye therefore flags
noise as regressions. Every comparison here works on *log* times (the noise is
multiplicative, so ratios are the natural effect size), reports a head/base ratio
with a confidence interval, and reaches one of four verdicts through one shared
rule, :func:`decide`.

The decision rule
-----------------
Let ``m = min_effect`` (default 5 %). A comparison is *significant* when its
p-value is below ``alpha`` and its ``1 - alpha`` confidence interval of the ratio
excludes 1 (for the tests used here the two agree up to rounding).

* ``regressed``: significant and the point estimate ``ratio >= 1 + m``.
* ``improved``: significant and ``ratio <= 1 / (1 + m)``.
* ``unchanged``, *equivalence shown*: two one-sided tests (TOST) at ``alpha`` reject
  both "head is at least ``m`` slower" and "head is at least ``m`` faster". For the
  t-test that is exactly the ``1 - 2 alpha`` interval lying inside ``[1/(1+m), 1+m]``;
  the verdict then reads "unchanged (within +-m)" (:attr:`Verdict.equivalent`).
* ``unchanged``, *below the minimum effect*: the change is significant but its estimate
  is smaller than ``m`` (the interval may still reach beyond it, so this is not
  equivalence, and the reason says so).
* ``inconclusive``: anything else: the interval still reaches beyond the minimum
  effect, and more samples would help. An inconclusive verdict of a test that has
  run its course states the smallest slowdown it could have detected
  (:attr:`Verdict.detectable`, 95 % power, :func:`min_detectable_effect`), so that
  "no regression shown" is never read as "no regression".

In two sentences: a change is a regression (improvement) only when it is
statistically significant at ``alpha`` *and* its estimated size is at least the
minimum effect. It is unchanged when two one-sided tests show it lies within the
minimum-effect band or the significant change is smaller than that band, and
inconclusive otherwise, which asks for more samples rather than guessing.

Comparisons
-----------
* :func:`compare_paired`: base and head measured interleaved (A B B A ...); a
  one-sample t-test on ``log(head/base)``. Pairing cancels the shared drift.
* :func:`compare_unpaired`: two result sets measured at different times; a
  Mann-Whitney U test on log times with the Hodges-Lehmann shift and its
  distribution-free interval. It cannot tell machine drift from a code change, so
  its verdicts are weaker evidence than paired ones.
* :func:`compare_segments`: two stretches of a history (the commits before a step
  and after it), each commit with its samples. The commit is the unit: a Welch t-test
  on the commits' mean log times, whose variance is at least what the within-commit
  spread implies, so machine drift between recordings counts as noise; when commits
  hold several samples, a Mann-Whitney test on the pooled samples must agree.
* :func:`compare_counter`: deterministic counters (allocations, instructions, graph
  ops) repeat within 0.5 %; medians are compared against a relative threshold, no
  test.

The sequential gate
-------------------
:class:`SequentialPairedTest` looks at the paired data after every new pair and may
stop early. Looking repeatedly at a fixed-level test inflates the false-alarm rate,
so the looks share ``alpha`` with a Haybittle-Peto style boundary justified by the
Bonferroni (union) bound: all interim looks together get ``interim_share * alpha``
(10 % of it by default), split equally between them, and the last planned look
(``max_pairs``) gets the rest. Since the probability that *any* look wrongly
declares significance is at most the sum of the per-look levels, the overall
two-sided false-significance rate is at most ``alpha`` for every look schedule,
without numerical integration and whatever the correlation between looks, and the
one-sided false-alarm rate ("regressed" under A/A) is at most ``alpha / 2``. The
price is small: the final look runs at ``0.9 * alpha`` (critical z 2.61 instead of
2.58), while interim looks stop only for gross regressions, which is where
stopping early saves most CI time. Stopping for "unchanged (within +-m)" spends the
same levels: each look's TOST runs at that look's level, so by the same union bound
a true change of ``m`` or more is declared equivalent at some look with probability
at most ``alpha``.

Defaults: ``min_pairs=5, max_pairs=60, look_every=1``. A 10 % shift at a paired
log-ratio SD of 0.15 needs about 48 pairs for 95 % power at the final look's
level; 60 pairs give about 98 % (the tests measure it by simulation).

Noise model
-----------
:func:`simulate_pairs` draws independent lognormal noise per sample (default SD
0.10 in log space) times a slow drift (a random walk in log space whose total SD
over the run is ``drift_sd``, default 0.3), with samples taken in the order
A B B A A B B A ... . With the defaults and 60 pairs, a single sample's spread over
a run is about 15 % and the paired log-ratio SD is about 0.144, matching what was
measured on the 2-core CI machine (11-25 % and 0.13-0.15).

Study fits
----------
:func:`fit_power_law` fits ``time = a + b * depth**k`` on log times with a bootstrap
interval for ``k``; :func:`linearity` classifies the growth; :func:`paired_effect`
gives a ratio with interval for paired treatment/control studies.

Docstrings use the numpydoc ``Parameters`` / ``Returns`` sections. Only numpy,
scipy, dataclasses and math are used, so importing this module imports no AD
framework.

The modules
-----------
One job each, in the order a reader needs them:

* ``verdicts``: :class:`Summary`, :class:`Verdict`, the rule :func:`decide` and
  :func:`equivalent`, and the input checks every test shares;
* ``paired``: :func:`compare_paired`, its t interval and TOST, :func:`detectable_effect`;
* ``power``: :func:`min_detectable_effect`, :func:`paired_log_sd`, :func:`sd_interval`;
* ``failures``: :func:`compare_failures` (:class:`FailureTest`);
* ``unpaired``: :func:`compare_unpaired` and :func:`compare_segments`;
* ``counters``: :func:`compare_counter`;
* ``sequential``: :class:`SequentialPairedTest`;
* ``simulate``: :func:`simulate_pairs`, :func:`simulate_gate`, :func:`false_alarm_rate`,
  :func:`power`;
* ``fits``: :func:`fit_power_law`, :func:`linearity`, :func:`paired_effect`.

This package re-exports their public names, so ``from ttfg.decide.stats import
compare_paired`` reads the same as before the split.
"""

from __future__ import annotations

from .counters import compare_counter
from .failures import FAILURE_ALPHA, FailureTest, compare_failures
from .fits import Effect, PowerLawFit, fit_power_law, linearity, paired_effect
from .paired import compare_paired, detectable_effect
from .power import min_detectable_effect, paired_log_sd, sd_interval
from .sequential import SequentialPairedTest
from .simulate import false_alarm_rate, power, simulate_gate, simulate_pairs
from .unpaired import compare_segments, compare_unpaired
from .verdicts import VERDICTS, Summary, Verdict, decide, equivalent, summarize

__all__ = [
    "VERDICTS", "Summary", "summarize", "Verdict", "decide", "compare_paired", "compare_unpaired",
    "compare_counter", "compare_segments", "SequentialPairedTest", "PowerLawFit", "fit_power_law", "linearity", "Effect",
    "paired_effect", "simulate_pairs", "paired_log_sd", "min_detectable_effect", "sd_interval", "simulate_gate",
    "false_alarm_rate", "power", "FailureTest", "compare_failures", "FAILURE_ALPHA", "equivalent",
    "detectable_effect",
]
