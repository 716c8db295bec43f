"""The static history site: columnar scan of results, pages, feeds, incremental output.

Entry points: :func:`scan_results` (results folder -> :class:`SiteData`, through the one
column reader and its signed per-file cache), :func:`publish_site` (SiteData + findings ->
site folder) and :func:`run_asv_publish` (asv's own site, optional).
"""

from __future__ import annotations

from neuronasv.publish.asvsite import run_asv_publish
from neuronasv.publish.feeds import atom_feed, regressions_json
from neuronasv.publish.scan import scan_results
from neuronasv.publish.site import PublishOptions, PublishReport, publish_site, series_states
from neuronasv.publish.sitedata import MachineData, SeriesInfo, SiteData, from_history

__all__ = [
    "MachineData",
    "PublishOptions",
    "PublishReport",
    "SeriesInfo",
    "SiteData",
    "atom_feed",
    "from_history",
    "publish_site",
    "regressions_json",
    "run_asv_publish",
    "scan_results",
    "series_states",
]
