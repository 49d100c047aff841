"""Report files rendered beside the writing of the layer outputs.

Rendering a report (core code: the figures with matplotlib, the page with Jinja2) takes no
QGIS object, so it can run on a worker thread of its own while the algorithm's thread writes
the layer outputs: most of that writing (QGIS inserting features into GeoPackages, building
their spatial indexes) runs without Python's GIL. The texts are the same as rendered in line;
only the moment they are made changes.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from ..core import figures


def start_loading_figure_libraries() -> None:
    """Import and initialise matplotlib (``figures.load_libraries``) on a thread of its own,
    for a report drawn later: called before a long evaluation, that work is done while the
    evaluation's threads leave a core free. Any error is left to the real drawing to raise.
    """
    def load():
        try:
            figures.load_libraries()
        except Exception:  # noqa: BLE001 (the report's own drawing reports it)
            pass

    threading.Thread(target=load, name="ioueval-figures").start()


class ReportRenderer:
    """One worker thread that renders report texts while the caller writes layer outputs.

    Use::

        renderer = ReportRenderer()
        try:
            html = renderer.submit(render_html, report)   # starts at once
            ... write the layers ...
            write_reports(..., ((name, html), ...))        # html(report) waits for the text
        finally:
            renderer.close()

    The report dict must not change after ``submit``.
    """

    def __init__(self):
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="ioueval-report")

    def submit(self, render, report):
        """Start ``render(report) -> str``; returns a callable(report) -> str that waits
        for the text and returns it (re-raising what ``render`` raised), the shape
        ``reporting.write_reports`` takes. It may be called once."""
        pending = [self._executor.submit(render, report)]

        def text(_report):
            # Taken out first: a render's exception, raised here, holds the caller's frames,
            # and those frames hold this function; the future must not close that cycle
            # (QGIS objects in it would wait for the garbage collector).
            return pending.pop().result()

        return text

    def close(self) -> None:
        """Stop the thread without waiting: after the texts were taken it has nothing left
        to do; after a cancel or an error a render under way finishes on its own (its text
        is dropped) and one not started is dropped."""
        self._executor.shutdown(wait=False, cancel_futures=True)
