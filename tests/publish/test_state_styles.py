"""Every state the site can show is styled and marked from its role, whatever the metric.

An exact metric's states (``allocates-more``, ...) come from the registry; the stylesheet
and the chart script know only the roles (``exact-more``/``exact-less``), so a new entry
needs no asset change — and a state without a style would be an unstyled badge.
"""

from __future__ import annotations

import re
from pathlib import Path

import neuronasv.publish as publish
from neuronasv.analyse.states import FLAGGED, STATES
from neuronasv.metrics import EXACT
from neuronasv.publish.pages import badge_text, state_badge, state_style

ASSETS = Path(publish.__file__).parent / "assets"


def test_every_state_has_a_style_in_the_stylesheet() -> None:
    css = (ASSETS / "site.css").read_text(encoding="utf-8")
    styled = set(re.findall(r"\.st-([a-z-]+)", css))
    assert {state_style(s) for s in STATES} <= styled


def test_every_flagged_state_has_a_chart_mark() -> None:
    js = (ASSETS / "site.js").read_text(encoding="utf-8")
    block = js[js.index("var MARK = {") : js.index("};", js.index("var MARK = {"))]
    marked = set(re.findall(r'"?([a-z-]+)"?\s*:\s*\{\s*color', block))
    assert {state_style(s) for s in FLAGGED if s != "failed"} <= marked


def test_exact_states_take_their_role_and_their_own_words() -> None:
    for m in EXACT:
        assert state_style(m.state_more) == "exact-more"
        assert state_style(m.state_less) == "exact-less"
        assert badge_text(m.state_more) == m.more
        assert 'class="st st-exact-more"' in state_badge(m.state_more)
    assert state_style("more-work") == "more-work" and badge_text("suspect") == "suspect"
