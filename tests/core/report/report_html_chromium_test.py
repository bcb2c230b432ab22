#!/usr/bin/python3
"""report.html in a real browser (Debian's headless Chromium) at 1400 px.

report_pages (argv[1]) writes two reports: the example CNN's, from the whole
job, and a 200-layer one whose layers sit in a fused group with a
110-character name. For each, a copy with a probe script appended is
rendered with --dump-dom and --screenshot (a 1400 px wide PNG of the top
900 px) in one run: the probe writes what the browser laid out (document
scrollWidth, the layer table's and the chart's boxes, whether the bits and
SQNR cells are cut, the row order after clicking the SQNR header) into a
<pre id="probe"> at the end of the page, which this script reads back and
checks.

Exit 77 (ctest: skipped) only when chromium is not installed.
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

WIDTH, HEIGHT = 1400, 900

PROBE = r"""
<script>
(function() {
  var d = document.documentElement;
  var t = document.getElementById('layers');
  var c = document.getElementById('chart');
  var box = function(e) {
    var r = e ? e.getBoundingClientRect() : {width: 0, height: 0, right: 0};
    return {width: r.width, height: r.height, right: r.right};
  };
  var heads = Array.prototype.map.call(t.tHead.rows[0].cells,
                                       function(h) { return h.textContent; });
  var col = function(name) { return heads.indexOf(name); };
  // Cells of these columns must show whole (never cut by the layout).
  var cut = [];
  ['W bits', 'A bits', 'SQNR'].forEach(function(name) {
    Array.prototype.forEach.call(t.tBodies[0].rows, function(r, i) {
      var cell = r.cells[col(name)];
      if (cell.scrollWidth > cell.clientWidth) cut.push(name + '@' + i);
    });
  });
  var names = t.tBodies[0].querySelectorAll('span[title]');
  var titled = Array.prototype.filter.call(names, function(s) {
    return s.title.length > s.textContent.length;
  }).length;
  var out = {
    scrollWidth: d.scrollWidth,
    clientWidth: d.clientWidth,
    table: box(t),
    chart: box(c),
    chartMarks: c ? c.querySelectorAll('rect,circle').length : 0,
    rows: t.tBodies[0].rows.length,
    cut: cut,
    titled: titled,
    headers: heads.length,
    sortable: t.tHead.querySelectorAll('th[data-sort]').length
  };
  // Sort by SQNR (one click: ascending) and read the keys back.
  t.tHead.rows[0].cells[col('SQNR')].click();
  out.sqnrAfterSort = Array.prototype.map.call(t.tBodies[0].rows, function(r) {
    var v = r.cells[col('SQNR')].dataset.v;
    return v === '' ? null : parseFloat(v);
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(binary, profile, *args):
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu",
           "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}",
           f"--user-data-dir={profile}", "--no-first-run",
           "--run-all-compositor-stages-before-draw",
           "--virtual-time-budget=5000", *args]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["HOME"] = profile
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                          env=env)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {done.returncode}:\n"
                             f"{done.stderr[-3000:]}")
    return done.stdout


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    return struct.unpack(">II", head[16:24])


def check_page(binary, work, page, expect_rows=None):
    """Renders page (probe and screenshot) and returns a list of failures."""
    with open(page, encoding="utf-8") as f:
        html = f.read()
    probed = page.replace(".html", ".probe.html")
    with open(probed, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", PROBE + "</body>"))
    # One run lays the page out, runs the probe (which then sorts the table)
    # and takes the screenshot of the first 900 px.
    shot = page.replace(".html", ".png")
    dom = run_chromium(binary, tempfile.mkdtemp(dir=work), "--dump-dom",
                       f"--screenshot={shot}", "file://" + probed)
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    if not found:
        return [f"{page}: the probe wrote nothing; DOM tail: {dom[-500:]}"]
    m = json.loads(found.group(1).replace("&quot;", '"'))
    print(os.path.basename(page), json.dumps(m)[:400])
    failures = []
    if m["scrollWidth"] > WIDTH:
        failures.append(f"page scrollWidth {m['scrollWidth']} > {WIDTH}")
    if m["table"]["right"] > m["clientWidth"]:
        failures.append(f"layer table ends at {m['table']['right']} px, past "
                        f"the viewport ({m['clientWidth']} px)")
    if m["chart"]["width"] <= 0 or m["chart"]["height"] <= 0:
        failures.append(f"chart not drawn: {m['chart']}")
    if m["chartMarks"] < m["rows"]:
        failures.append(f"chart has {m['chartMarks']} marks for "
                        f"{m['rows']} layers")
    if m["cut"]:
        failures.append(f"bits/SQNR cells cut: {m['cut'][:10]}")
    if m["sortable"] != m["headers"]:
        failures.append(f"{m['sortable']} of {m['headers']} headers sortable")
    if expect_rows is not None and m["rows"] != expect_rows:
        failures.append(f"{m['rows']} rows, expected {expect_rows}")
    keys = [v for v in m["sqnrAfterSort"] if v is not None]
    if keys != sorted(keys) or m["sqnrAfterSort"][:len(keys)] != keys:
        failures.append(f"SQNR sort not ascending: {m['sqnrAfterSort'][:20]}")
    if not os.path.exists(shot):
        failures.append("no screenshot written")
    elif png_size(shot)[0] != WIDTH:
        failures.append(f"screenshot is {png_size(shot)} px, not {WIDTH} wide")
    keep = os.environ.get("QUANTD_REPORT_SCREENSHOTS")
    if keep and os.path.exists(shot):
        os.makedirs(keep, exist_ok=True)
        shutil.copy(shot, keep)
    return [f"{os.path.basename(page)}: {f}" for f in failures] + (
        [] if m["titled"] > 0 or expect_rows is None else
        [f"{os.path.basename(page)}: no cut name carries its full title"])


def main():
    binary = chromium()
    if binary is None:
        print("SKIP: chromium is not installed (scripts/setup.sh installs "
              "Debian's chromium)")
        return 77
    pages_tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([pages_tool, work], check=True, timeout=300)
        failures = check_page(binary, work,
                              os.path.join(work, "example_cnn.html"))
        failures += check_page(binary, work, os.path.join(work, "wide.html"),
                               expect_rows=200)
    for f in failures:
        print("FAIL:", f)
    print("OK" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
