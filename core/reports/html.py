"""The HTML reports of every algorithm: one template skeleton (header, alerts, the algorithm's
own sections, reproduce, provenance, definitions) rendered with Jinja2 into one
self-contained file (inline CSS, figures embedded as data URIs, no JavaScript, no network).

An algorithm builds its report dict (the one it writes as JSON), a list of ``Section``
(each a small Jinja2 template under ``resources/templates/`` with its own context, or ready
HTML), its ``Definition`` list, and calls ``render_report``. Numbers taken from the report
dict are written with the template global ``shown(*path)``, which wraps them in
``<span data-key='["metrics", "f1"]'>`` so a test can check every number on the page
against the JSON (see ``shown_values``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from ..util.wording import plural
from .reproduce import QGIS_PROCESS, processing_run_code, qgis_process_command

#: Templates folder: base.html.j2 and each algorithm's section templates.
TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "resources" / "templates"


#: Alerts shown under the headline; the others are in a collapsed "N more alerts".
SHOWN_ALERTS = 4


@dataclass
class Section:
    """One section of a report, in the order given to ``render_report``.

    Attributes:
        id: HTML id of the <section> (an anchor, and what tests look for), e.g. "iou".
        title: heading, e.g. "IoU".
        template: a template file relative to TEMPLATES_DIR (e.g.
            "evaluatepolygons/iou.html.j2"), rendered with ``context`` plus the globals
            ``report``, ``shown``, ``figure`` and the filters ``number``, ``percent``.
        context: the template's variables (figures as data URIs from core.reports.figures, tables...).
        html: ready (trusted, already escaped) HTML instead of a template.
        lead: shown before the alerts (a headline), not after them.
    """

    id: str
    title: str
    template: str | None = None
    context: dict = field(default_factory=dict)
    html: str | None = None
    lead: bool = False


@dataclass
class Definition:
    """A key of the JSON report explained: what it means, its formula, where it comes from.

    ``key`` is the JSON key (a dotted path for nested ones, e.g. "bootstrap.ci");
    ``formula`` is plain text or simple HTML-free notation such as "TP / (TP + FP)".
    """

    key: str
    meaning: str
    formula: str = ""
    source: str = ""


@dataclass
class Alert:
    """A warning of the run worded for an analyst. ``level``: "warning" or "info"."""

    text: str
    level: str = "warning"


def render_report(
    report: dict,
    *,
    title: str,
    algorithm_id: str,
    sections: Sequence[Section],
    summary: str = "",
    alerts: Sequence[Alert | str] = (),
    definitions: Sequence[Definition] = (),
    templates_dir: str | Path = TEMPLATES_DIR,
    summary_template: str | None = None,
    summary_context: dict | None = None,
    shown_alerts: int = SHOWN_ALERTS,
) -> str:
    """The report as one self-contained HTML page.

    Args:
        report: the JSON report dict. Read by the skeleton: ``inputs`` ({role: {"source",
            "layer_name", "crs", "feature_count", "selected_features_only", "filter"}}),
            ``provenance`` ({name: version}; ``created_utc`` is the date shown, now if
            absent), ``reproduce`` ({"algorithm": id, "parameters": {NAME: plain value},
            "qgis_process": the program that runs it from a shell}, optional). NaN/inf are
            shown as "–".
        title: page title, e.g. "Evaluate polygons (IoU matching)".
        algorithm_id: e.g. "ioueval:evaluatepolygons".
        sections: the algorithm's sections, shown between the alerts and "Reproduce".
        summary: the result in one or two sentences, under the header; or
        summary_template: a template (relative to ``templates_dir``) for it, rendered with
            ``summary_context``, so its numbers can be ``shown``.
        alerts: warnings of the run (strings are warnings); the first ``shown_alerts`` shown
            under the headline, the others in a collapsed "N more alerts" (<details>).
        definitions: every key of the JSON report, shown in the appendix's collapsed
            "Definitions" (a <details> element without ``open``, as are "What was compared",
            "Parameters and reproduce" and "Provenance").
    Returns the HTML text. Raises jinja2.TemplateError on a template error and KeyError
    (from ``shown``) when a section shows a key that the report does not have.
    """
    env = template_environment(templates_dir)
    safe = json_safe(report)
    env.globals["report"] = safe
    env.globals["shown"] = _shown_function(safe)
    rendered = []
    for section in sections:
        body = section.html if section.template is None else (
            env.get_template(section.template).render(**section.context)
        )
        rendered.append({"id": section.id, "title": section.title, "body": body or "",
                         "lead": section.lead})
    if summary_template is not None:
        from markupsafe import Markup

        # a template of this package, rendered with autoescape on
        summary = Markup(  # nosec B704
            env.get_template(summary_template).render(**(summary_context or {})))
    provenance = dict(safe.get("provenance") or {})
    created = provenance.pop("created_utc", None) or utc_now()
    reproduce = safe.get("reproduce") or {}
    parameters = reproduce.get("parameters") or {}
    return env.get_template("base.html.j2").render(
        title=title,
        algorithm_id=algorithm_id,
        created=created,
        summary=summary,
        inputs=safe.get("inputs") or {},
        alerts=[a if isinstance(a, Alert) else Alert(str(a)) for a in alerts],
        sections=rendered,
        processing_run=processing_run_code(algorithm_id, parameters),
        qgis_process=qgis_process_command(
            algorithm_id, parameters, reproduce.get("qgis_process") or QGIS_PROCESS
        ),
        qgis_process_program=reproduce.get("qgis_process") or QGIS_PROCESS,
        qgis_process_name=_program_name(reproduce.get("qgis_process") or QGIS_PROCESS),
        n_parameters=len(parameters),
        shown_alerts=max(int(shown_alerts), 0),
        provenance=provenance,
        definitions=list(definitions),
    )


def _program_name(program: str) -> str:
    """The file name of a program path, e.g. "/usr/bin/qgis_process.bin" -> "qgis_process.bin"."""
    return str(program).replace("\\", "/").rstrip("/").split("/")[-1] or str(program)


def template_environment(templates_dir: str | Path = TEMPLATES_DIR):
    """The Jinja2 environment of the reports (autoescape, strict undefined, filters
    ``number`` and ``percent``, globals ``figure`` and ``plural`` (util.wording.plural: the
    word that agrees with a count))."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = format_number
    env.filters["percent"] = format_percent
    env.globals["plural"] = plural  # plural(n, "field") -> "field" or "fields"
    # _figure_html escapes every value it puts into the markup
    env.globals["figure"] = lambda uri, alt, caption="", id="": Markup(  # nosec B704
        _figure_html(uri, alt, caption, id)
    )
    return env


def utc_now() -> str:
    """The current UTC time as "YYYY-MM-DD HH:MM UTC" (the report's date)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def format_number(value, digits: int | None = None) -> str:
    """A number as shown in the reports: ints with thousands separators; floats with
    ``digits`` decimals (default 4 below 1,000, 1 below 100,000, else 0); None/NaN as "–"."""
    if value is None or isinstance(value, str):
        return "–" if value is None else value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    value = float(value)
    if not math.isfinite(value):
        return "–"
    if digits is None:
        digits = 4 if abs(value) < 1000 else (1 if abs(value) < 1e5 else 0)
    text = f"{value:,.{digits}f}"
    # a negative value that rounds to zero is shown as 0, not "-0"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def format_percent(value, digits: int = 1) -> str:
    """A fraction in [0, 1] as a percentage, e.g. 0.853 -> "85.3 %"; None as "–"."""
    if value is None or not math.isfinite(float(value)):
        return "–"
    return f"{100 * float(value):.{digits}f} %"


def json_safe(value):
    """The value with numpy scalars/arrays as Python ones and NaN/inf as None."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def lookup(report: dict, path: Sequence) -> object:
    """report[path[0]][path[1]]... (list indices as ints). Raises KeyError/IndexError."""
    value = report
    for part in path:
        value = value[part]
    return value


def shown_values(html: str) -> list[tuple[list, str]]:
    """Every number shown with ``shown``: [(path, text as shown)], in page order (tests)."""

    class Parser(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found, self.stack = [], []

        def handle_starttag(self, tag, attrs):
            key = dict(attrs).get("data-key")
            self.stack.append(key)
            if key is not None:
                self.found.append([json.loads(key), ""])

        def handle_endtag(self, tag):
            if self.stack:
                self.stack.pop()

        def handle_data(self, data):
            if self.stack and self.stack[-1] is not None:
                self.found[-1][1] += data

    parser = Parser()
    parser.feed(html)
    return [(path, text) for path, text in parser.found]


def _shown_function(report: dict):
    from markupsafe import Markup, escape

    def shown(*path, digits: int | None = None, percent: bool = False):
        value = lookup(report, path)
        text = format_percent(value, digits or 1) if percent else format_number(value, digits)
        key = escape(json.dumps(list(path), ensure_ascii=False))
        kind = "percent" if percent else "number"
        # key and text escaped, kind one of two constants
        return Markup(  # nosec B704
            f'<span class="v" data-key="{key}" data-kind="{kind}">{escape(text)}</span>')

    return shown


def _figure_html(uri: str, alt: str, caption: str, id: str) -> str:
    from markupsafe import escape

    id_attr = f' id="{escape(id)}"' if id else ""
    cap = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    return f'<figure{id_attr}><img src="{escape(uri)}" alt="{escape(alt)}">{cap}</figure>'
