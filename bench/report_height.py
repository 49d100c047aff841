"""Height of HTML reports in headless Chromium: the page as it opens (every <details> closed),
the page with every <details> open, and where the first screen ends (the bottom of the
figures at the top of the page, the top of the first <details>).

A copy of each report gets a measuring script just before </body> (the report itself has no
JavaScript); Chromium loads it at a window of --width x 1000 px and prints the DOM, from
which the numbers are read. Needs `chromium` on PATH (Debian: apt-get install chromium).

    bash scripts/run_sample.sh /tmp/sample
    python3 bench/report_height.py /tmp/sample/report.html

Prints one line per report: height closed, height open (px), the bottom of the lowest
figure outside any <details>, the top of the first <details>.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

_SCRIPT = """<script>
window.addEventListener('load', function () {
  var out = {};
  var y = window.scrollY;
  var below = function (e) { return Math.round(e.getBoundingClientRect().bottom + y); };
  var above = function (e) { return Math.round(e.getBoundingClientRect().top + y); };
  out.closed = document.documentElement.scrollHeight;
  var figures = Array.from(document.querySelectorAll('figure')).filter(
    function (f) { return !f.closest('details'); });
  out.figures_bottom = figures.length ? Math.max.apply(null, figures.map(below)) : null;
  var first = document.querySelector('body details');
  out.first_details_top = first ? above(first) : null;
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  out.open = document.documentElement.scrollHeight;
  var pre = document.createElement('pre');
  pre.id = 'REPORT-HEIGHT';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def measure(path: Path, width: int = 1280, chromium: str = "chromium") -> dict:
    """{"closed", "open", "figures_bottom", "first_details_top"} in CSS px for one report."""
    page = path.read_text(encoding="utf-8").replace("</body>", _SCRIPT + "</body>")
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False, encoding="utf-8") as f:
        f.write(page)
    try:
        dom = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             f"--window-size={width},1000", "--virtual-time-budget=5000", "--dump-dom",
             Path(f.name).as_uri()],
            capture_output=True, text=True, timeout=300, check=False).stdout
    finally:
        os.unlink(f.name)
    found = re.search(r'<pre id="REPORT-HEIGHT">(.*?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError(f"{path}: Chromium printed no measurement")
    return json.loads(html.unescape(found.group(1)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", type=Path, nargs="+", help="HTML reports")
    parser.add_argument("--width", type=int, default=1280, help="window width, px")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    for path in args.reports:
        m = measure(path, args.width, args.chromium)
        print(f"{path}: {m['closed']:,} px closed, {m['open']:,} px open; figures outside "
              f"<details> end at {m['figures_bottom']} px, first <details> at "
              f"{m['first_details_top']} px")


if __name__ == "__main__":
    main()
